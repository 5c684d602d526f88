// The version of this SDK. The platform compares it with the manifest's pinned
// `runtime.sdk.version`, and a Function that reports its SDK version returns this constant
// instead of a hard-coded string (spec section 9).

/**
 * The `@service/server` version this module implements.
 *
 * @example
 * import { SERVICE_SDK_VERSION, defineFunction, object } from '@service/server'
 * export default defineFunction({ input: object({}), handler: () => ({ sdk: SERVICE_SDK_VERSION }) })
 */
export const SERVICE_SDK_VERSION = '2.6.0'
