/**
 * Turns a PostgREST request's query string (and its `Range`/`Prefer` headers) into the typed
 * AST of `query-ast.ts`, with PostgREST 12's grammar and error codes. Pure functions: no I/O,
 * no schema knowledge, no SQL. Whether a column, relation or function exists is for the
 * planner to decide; this module only decides what the request says.
 *
 * How query keys are read, as in PostgREST:
 * - `select`, `columns`, `on_conflict` are reserved (the first occurrence counts);
 * - a key whose last dot-separated word is `order`, `limit`, `offset`, `and` or `or` is that
 *   parameter for the embedding path before it (`clients.order`, `not.or`);
 * - on `GET /rpc/fn`, keys the caller names in `argumentNames` are function arguments;
 * - every other key is a filter, and a value that is not an operator expression is PGRST100.
 * Parameters are parsed in PostgREST's order (order, and/or, columns, select, filters,
 * on_conflict; then the aggregate refusal; then limit/offset and the Range header), so the
 * first error reported is the one PostgREST would report.
 */

import type {
  EmbedPath,
  Filter,
  LogicTree,
  MutationMethod,
  MutationRequest,
  OrderClause,
  RangeClause,
  RangeWindow,
  ReadRequest,
  RpcArgument,
  SelectItem,
} from './query-ast.ts'
import { aggregatesNotAllowed, limitWithoutOrder, putLimitNotAllowed } from './parse-errors.ts'
import { isLogicKey, parseFilter, parseLogicTree, parseTreePath } from './query-filter.ts'
import { parseOrder } from './query-order.ts'
import { combineRanges, parseLimitOrOffset, parseRange } from './query-range.ts'
import { Scanner, parseFieldName } from './query-scanner.ts'
import { parseSelectTree } from './query-select.ts'

export { MAX_EMBED_DEPTH, parseSelect } from './query-select.ts'
export { MAX_LOGIC_DEPTH } from './query-filter.ts'
export { parseOrder } from './query-order.ts'
export { combineRanges, parseRange } from './query-range.ts'
export { parsePrefer, type ParsePreferOptions } from './query-prefer.ts'

type Pair = readonly [key: string, value: string]

interface SortedParams {
  readonly select: string | null
  readonly columns: string | null
  readonly onConflict: string | null
  readonly order: Pair[]
  readonly logic: Pair[]
  /** `limit` and `offset` keys together, in query order. */
  readonly windows: Pair[]
  readonly filters: Pair[]
  readonly rpcArguments: RpcArgument[]
}

function sortParams(search: URLSearchParams, argumentNames: ReadonlySet<string> | undefined): SortedParams {
  const sorted: SortedParams = {
    select: search.get('select'),
    columns: search.get('columns'),
    onConflict: search.get('on_conflict'),
    order: [],
    logic: [],
    windows: [],
    filters: [],
    rpcArguments: [],
  }
  for (const [key, value] of search) {
    if (key === 'select' || key === 'columns' || key === 'on_conflict') continue
    const last = key.slice(key.lastIndexOf('.') + 1)
    if (last === 'order') sorted.order.push([key, value])
    else if (last === 'limit' || last === 'offset') sorted.windows.push([key, value])
    else if (isLogicKey(key)) sorted.logic.push([key, value])
    else if (argumentNames?.has(key) === true) sorted.rpcArguments.push({ name: key, value })
    else sorted.filters.push([key, value])
  }
  return sorted
}

function pathId(path: EmbedPath): string {
  return JSON.stringify(path)
}

/** `order` for each path; when a path has several, the first wins (PostgREST's fold). */
function parseOrders(pairs: readonly Pair[]): OrderClause[] {
  const clauses: OrderClause[] = []
  const seen = new Set<string>()
  for (const [key, value] of pairs) {
    const { path } = parseTreePath(key)
    const terms = parseOrder(value)
    const id = pathId(path)
    if (seen.has(id)) continue
    seen.add(id)
    clauses.push({ path, terms })
  }
  return clauses
}

/** `columns` / `on_conflict`: a comma-separated list of names (spaces around commas allowed). */
function parseColumnList(value: string, what: string): readonly string[] {
  const s = new Scanner(value, { what })
  const names: string[] = []
  for (;;) {
    s.skipSpaces()
    const name = parseFieldName(s)
    if (!names.includes(name)) names.push(name)
    s.skipSpaces()
    if (s.atEnd()) return names
    if (s.peek() !== ',') s.unexpected(['","', 'end of input'])
    s.pos++
  }
}

interface Windows {
  /** Root `limit`/`offset` as written (null when absent). */
  readonly root: { readonly limit: number | null; readonly offset: number | null }
  readonly embedded: readonly RangeClause[]
}

/** `limit`/`offset` for each path; when repeated, the last wins (PostgREST's HashMap). */
function parseWindows(pairs: readonly Pair[]): Windows {
  const byPath = new Map<string, { path: EmbedPath; limit: number | null; offset: number | null }>()
  const entry = (key: string): { path: EmbedPath; limit: number | null; offset: number | null } => {
    const { path } = parseTreePath(key)
    const id = pathId(path)
    let found = byPath.get(id)
    if (found === undefined) {
      found = { path, limit: null, offset: null }
      byPath.set(id, found)
    }
    return found
  }
  for (const [key, value] of pairs) {
    if (key.endsWith('limit')) entry(key).limit = parseLimitOrOffset(value, 'limit')
    else entry(key).offset = parseLimitOrOffset(value, 'offset')
  }

  const root = byPath.get(pathId([])) ?? { limit: null, offset: null }
  const embedded: RangeClause[] = []
  for (const { path, limit, offset } of byPath.values()) {
    if (path.length > 0) embedded.push({ path, ...combineRanges(null, { limit, offset }) })
  }
  return { root: { limit: root.limit, offset: root.offset }, embedded }
}

interface Common {
  readonly select: readonly SelectItem[]
  readonly filters: readonly Filter[]
  readonly logic: readonly LogicTree[]
  readonly order: readonly OrderClause[]
  readonly columns: readonly string[] | undefined
  readonly onConflict: readonly string[] | undefined
  readonly windows: Windows
}

function parseCommon(params: SortedParams): Common {
  const order = parseOrders(params.order)
  const logic = params.logic.map(([key, value]) => parseLogicTree(key, value))
  const columns = params.columns === null ? undefined : parseColumnList(params.columns, 'columns parameter')
  const select = parseSelectTree(params.select ?? '*')
  const filters = params.filters.map(([key, value]) => parseFilter(key, value))
  const onConflict = params.onConflict === null ? undefined : parseColumnList(params.onConflict, 'on_conflict parameter')
  if (select.aggregate !== undefined) throw aggregatesNotAllowed(select.aggregate)
  const windows = parseWindows(params.windows)
  return { select: select.items, filters, logic, order, columns, onConflict, windows }
}

export interface ParseReadOptions {
  /** On `GET /rpc/fn`: the function's argument names; those keys become `rpcArguments`. */
  readonly argumentNames?: ReadonlySet<string>
  /** The `Range` request header, if any. */
  readonly range?: string | null
  /** The `Range-Unit` request header, if any. */
  readonly rangeUnit?: string | null
}

/**
 * Parses a GET/HEAD request on a table, view or function.
 *
 * ```ts
 * const request = parseReadRequest('people', new URL(req.url).searchParams, {
 *   range: req.headers.get('range'),
 *   rangeUnit: req.headers.get('range-unit'),
 * })
 * // request.select, request.filters, request.order, request.offset, request.limit ...
 * ```
 *
 * Throws `QueryParseError` (PGRST100, PGRST103, PGRST123).
 */
export function parseReadRequest(resource: string, search: URLSearchParams, options: ParseReadOptions = {}): ReadRequest {
  const params = sortParams(search, options.argumentNames)
  const common = parseCommon(params)
  const window = combineRanges(parseRange(options.range ?? null, options.rangeUnit ?? null), common.windows.root)
  return {
    kind: 'read',
    resource,
    select: common.select,
    filters: common.filters,
    logic: common.logic,
    order: common.order,
    ranges: common.windows.embedded,
    offset: window.offset,
    limit: window.limit,
    rpcArguments: params.rpcArguments,
  }
}

export interface ParseMutationOptions {
  readonly method: MutationMethod
}

/**
 * Parses the query string of a POST, PATCH, DELETE or PUT. What PostgREST 12 does with each
 * part decides what is kept:
 * - root `order`/`limit`/`offset`: PATCH/DELETE keep them (limited update/delete) but a
 *   `limit`/`offset` needs an `order` (PGRST109); PUT refuses `limit`/`offset` (PGRST114);
 *   POST ignores all three;
 * - `columns`: POST and PATCH; `on_conflict`: POST; elsewhere parsed (so errors surface, as
 *   PostgREST parses them on every request) and dropped;
 * - the `Range` header is ignored: PostgREST 12 honours it on GET only.
 *
 * ```ts
 * parseMutationParams('people', new URLSearchParams('id=eq.1&select=id,name'), { method: 'PATCH' })
 * ```
 */
export function parseMutationParams(
  resource: string,
  search: URLSearchParams,
  options: ParseMutationOptions,
): MutationRequest {
  const { method } = options
  const common = parseCommon(sortParams(search, undefined))
  const { root } = common.windows
  const hasWindow = root.limit !== null || root.offset !== null
  const rootOrder = common.order.some((clause) => clause.path.length === 0)

  let order = common.order
  let window: RangeWindow = { offset: 0, limit: null }
  if (method === 'PATCH' || method === 'DELETE') {
    if (hasWindow && !rootOrder) throw limitWithoutOrder()
    window = combineRanges(null, root)
  } else {
    if (method === 'PUT' && hasWindow) throw putLimitNotAllowed()
    order = order.filter((clause) => clause.path.length > 0)
  }

  const columns = method === 'POST' || method === 'PATCH' ? common.columns : undefined
  const onConflict = method === 'POST' ? common.onConflict : undefined
  return {
    kind: 'mutation',
    method,
    resource,
    select: common.select,
    filters: common.filters,
    logic: common.logic,
    order,
    ranges: common.windows.embedded,
    offset: window.offset,
    limit: window.limit,
    ...(columns === undefined ? {} : { columns }),
    ...(onConflict === undefined ? {} : { onConflict }),
  }
}
