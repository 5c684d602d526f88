/** The data API's public surface: the `/rest/v1` handler and its schema cache. */
import { createDataApi } from './handler.ts'

export { createDataApi }
export { createSchemaCache, type SchemaCache } from './schema.ts'
export type DataApi = ReturnType<typeof createDataApi>
