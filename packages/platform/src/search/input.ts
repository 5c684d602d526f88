/**
 * The input rules of `ctx.data.search(name, { mode, query?, vector?, model?, where?, limit? })`
 * (spec 2.11, 4.3, 8), checked before any SQL: each broken rule is its own precise error.
 */
import { ServiceError } from '../lib/errors.ts'
import type { SearchDeclaration } from '../manifest/index.ts'

export type SearchMode = 'fullText' | 'vector' | 'hybrid'

export const MAX_QUERY_CHARS = 2048
export const DEFAULT_SEARCH_LIMIT = 10
export const MAX_SEARCH_LIMIT = 50
const MODES: readonly SearchMode[] = ['fullText', 'vector', 'hybrid']
const OPTION_NAMES = new Set(['mode', 'query', 'vector', 'model', 'where', 'limit'])
const FLOAT32_MAX = 3.4028234663852886e38

export interface SearchInput {
  readonly mode: SearchMode
  /** Trimmed. */
  readonly query: string | null
  readonly vector: number[] | null
  /** Filter column -> value (null meaning IS NULL). */
  readonly where: Record<string, string | number | boolean | null>
  readonly limit: number
}

function invalid(search: string, field: string, message: string): ServiceError {
  return new ServiceError('SEARCH_INPUT_INVALID', `search "${search}": ${message}`, { details: { search, field } })
}

/** Finds the declaration `name` names, or SEARCH_NOT_DECLARED. */
export function declarationNamed(searches: readonly SearchDeclaration[], name: unknown): SearchDeclaration {
  const found = typeof name === 'string' ? searches.find((search) => search.name === name) : undefined
  if (found === undefined) {
    const shown = typeof name === 'string' ? name.slice(0, 64) : String(typeof name)
    throw new ServiceError('SEARCH_NOT_DECLARED', `no search named "${shown}" is declared under data.search in service.yaml`, {
      details: { search: shown },
    })
  }
  return found
}

/**
 * Checks a search's options against its declaration.
 *
 * @example
 * readSearchInput(declaration, { mode: 'fullText', query: ' tea ' }) // { mode: 'fullText', query: 'tea', vector: null, where: {}, limit: 10 }
 */
export function readSearchInput(declaration: SearchDeclaration & { readonly filterTypes?: Readonly<Record<string, string>> }, options: unknown): SearchInput {
  const name = declaration.name
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw invalid(name, 'options', 'the options must be an object')
  const fields = options as Record<string, unknown>
  for (const key of Object.keys(fields)) {
    if (!OPTION_NAMES.has(key)) throw invalid(name, key.slice(0, 64), `unknown option "${key.slice(0, 64)}"; options are mode, query, vector, model, where and limit`)
  }
  const mode = fields['mode']
  if (typeof mode !== 'string' || !MODES.includes(mode as SearchMode)) throw invalid(name, 'mode', 'mode must be "fullText", "vector" or "hybrid"')
  const lexical = mode !== 'vector'
  const semantic = mode !== 'fullText'
  if (lexical && declaration.fullText === undefined) throw invalid(name, 'mode', `mode "${mode}" needs fullText, which this search does not declare`)
  if (semantic && declaration.vector === undefined) throw invalid(name, 'mode', `mode "${mode}" needs a vector, which this search does not declare`)
  for (const [key, relevant] of [['query', lexical], ['vector', semantic], ['model', semantic]] as const) {
    if (!relevant && fields[key] !== undefined) throw invalid(name, key, `${key} is irrelevant in mode "${mode}"; leave it out`)
    if (relevant && fields[key] === undefined) throw invalid(name, key, `mode "${mode}" needs ${key}`)
  }
  const query = lexical ? readQuery(name, fields['query']) : null
  let vector: number[] | null = null
  if (semantic) {
    const model = fields['model']
    if (typeof model !== 'string') throw invalid(name, 'model', 'model must be a string naming the embedding model')
    if (model !== declaration.vector!.model) {
      throw new ServiceError('SEARCH_MODEL_MISMATCH', `search "${name}": the vectors were made by model "${model.slice(0, 200)}" but the search declares "${declaration.vector!.model}"`, {
        details: { search: name, declared: declaration.vector!.model },
      })
    }
    vector = readVector(name, fields['vector'], declaration.vector!.dimensions)
  }
  return { mode: mode as SearchMode, query, vector, where: readWhere(declaration, fields['where']), limit: readLimit(name, fields['limit']) }
}

function readQuery(name: string, value: unknown): string {
  if (typeof value !== 'string') throw invalid(name, 'query', 'query must be a string')
  if (value.includes('\u0000')) throw invalid(name, 'query', 'query holds a NUL character, which no PostgreSQL text can')
  const query = value.trim()
  if (query === '') throw invalid(name, 'query', 'query is empty once trimmed')
  if ([...query].length > MAX_QUERY_CHARS) throw invalid(name, 'query', `query is longer than ${MAX_QUERY_CHARS} characters`)
  return query
}

function readVector(name: string, value: unknown, dimensions: number): number[] {
  if (!Array.isArray(value)) throw invalid(name, 'vector', 'vector must be an array of numbers')
  if (value.length !== dimensions) {
    throw new ServiceError('SEARCH_DIMENSION_MISMATCH', `search "${name}": the vector has ${value.length} dimensions but the search declares ${dimensions}`, {
      details: { search: name, declared: dimensions, actual: value.length },
    })
  }
  let norm = 0
  for (const [index, element] of value.entries()) {
    if (typeof element !== 'number' || !Number.isFinite(element)) throw invalid(name, 'vector', `vector[${index}] is not a finite number`)
    if (Math.abs(element) > FLOAT32_MAX) throw invalid(name, 'vector', `vector[${index}] is outside the float32 range`)
    norm += Math.fround(element) ** 2
  }
  if (!(norm > 0)) throw invalid(name, 'vector', 'vector has a zero norm; cosine distance needs a non-zero vector')
  return value as number[]
}

/**
 * Integer column types: the least value and the first value past the greatest (exclusive,
 * since int8's greatest, 2^63 - 1, is no float64).
 */
const INTEGER_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  int2: [-(2 ** 15), 2 ** 15],
  int4: [-(2 ** 31), 2 ** 31],
  int8: [-(2 ** 63), 2 ** 63],
}
const NUMERIC_TYPES = new Set(['int2', 'int4', 'int8', 'float4', 'float8', 'numeric'])

/**
 * Why a filter column of type `type` cannot hold `value`, or null where it can or only the
 * database can tell (a string for a number, a date, a uuid …: `run.ts` maps its refusal).
 * Refuses only what the column's input function would refuse, so every value that filtered
 * before still does (1 and "yes" for a boolean, "12" for an integer).
 */
function unfitFor(type: string | undefined, value: string | number | boolean): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? 'holds a NUL character, which no PostgreSQL text can' : null
  if (type === undefined) return null
  if (typeof value === 'boolean') return NUMERIC_TYPES.has(type) ? `is a boolean, but the column is ${type}` : null
  const range = INTEGER_RANGES[type]
  if (range !== undefined) {
    if (!Number.isInteger(value)) return `is not an integer, but the column is ${type}`
    if (value < range[0] || value >= range[1]) return `is outside the range of ${type}`
  }
  if (type === 'float4' && ((value !== 0 && Math.fround(value) === 0) || !Number.isFinite(Math.fround(value)))) return 'is outside the range of float4 (real)'
  if (type === 'bool' && value !== 0 && value !== 1) return 'is a number other than 0 or 1, but the column is boolean'
  return null
}

function readWhere(declaration: SearchDeclaration & { readonly filterTypes?: Readonly<Record<string, string>> }, value: unknown): SearchInput['where'] {
  if (value === undefined) return {}
  const name = declaration.name
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(name, 'where', 'where must be an object of filter column -> value')
  for (const [column, filter] of Object.entries(value)) {
    if (!declaration.filters.includes(column)) {
      throw invalid(name, 'where', `"${column.slice(0, 64)}" is not a declared filter of this search${declaration.filters.length > 0 ? ` (filters: ${declaration.filters.join(', ')})` : ''}`)
    }
    const scalar = filter === null || typeof filter === 'string' || typeof filter === 'boolean' || (typeof filter === 'number' && Number.isFinite(filter))
    if (!scalar) throw invalid(name, 'where', `where.${column} must be a string, number, boolean or null (equality only)`)
    const unfit = filter === null ? null : unfitFor(declaration.filterTypes?.[column], filter)
    if (unfit !== null) throw invalid(name, 'where', `where.${column} ${unfit}`)
  }
  return value as SearchInput['where']
}

function readLimit(name: string, value: unknown): number {
  if (value === undefined) return DEFAULT_SEARCH_LIMIT
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_SEARCH_LIMIT) {
    throw invalid(name, 'limit', `limit must be an integer from 1 to ${MAX_SEARCH_LIMIT}`)
  }
  return value
}
