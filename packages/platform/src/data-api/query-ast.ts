/**
 * The typed form of a PostgREST request: what `select`, the filters, `and`/`or`, `order`,
 * `limit`/`offset`, `columns`, `on_conflict` and the `Range`/`Prefer` headers of one request
 * mean, after parsing and before any planning or SQL. Every identifier and value here is
 * plain data taken from the request; the SQL builder must bind values as parameters and
 * quote identifiers, never splice them in. All types are readonly and free of classes so an
 * AST can be compared, logged and serialised as JSON.
 */

/**
 * Where in the embedding tree a filter, order or range applies: `[]` is the requested
 * resource, `['clients', 'projects']` is `projects` embedded in `clients` (each element is the
 * embed's alias when it has one, else its relation name, as written in the request).
 */
export type EmbedPath = readonly string[]

/** `->` keeps JSON, `->>` extracts text. */
export type JsonArrow = '->' | '->>'

/** One step of `data->a->>0`: a string key, or an integer array index (may be negative). */
export interface JsonPathStep {
  readonly op: JsonArrow
  readonly key: string | number
}

export type JsonPath = readonly JsonPathStep[]

// ---------------------------------------------------------------------------------------
// select

/** `alias:name->json::cast`. */
export interface ColumnSelect {
  readonly kind: 'column'
  readonly name: string
  readonly jsonPath: JsonPath
  readonly cast?: string
  readonly alias?: string
}

/** `*`: every column of the resource at this level. */
export interface StarSelect {
  readonly kind: 'star'
}

/**
 * `alias:relation!hint!inner(...)` or `...relation!hint(...)` (spread: the embedded columns
 * are merged into the parent object; spreads take no alias). `relation` is a table, view or
 * foreign-key/column name to embed through; `hint` disambiguates which relationship.
 * `select` is empty for `relation()` (embedded only to filter the parent, e.g. with `!inner`).
 */
export interface EmbedSelect {
  readonly kind: 'embed'
  readonly relation: string
  readonly alias?: string
  readonly hint?: string
  readonly inner: boolean
  readonly left: boolean
  readonly spread: boolean
  readonly select: readonly SelectItem[]
}

export type SelectItem = ColumnSelect | StarSelect | EmbedSelect

// ---------------------------------------------------------------------------------------
// filters

/** Operators that accept the `(any)`/`(all)` modifier, as in PostgREST 12. */
export const QUANTIFIABLE_OPERATORS = ['eq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'match', 'imatch'] as const
export type QuantifiableOperator = (typeof QUANTIFIABLE_OPERATORS)[number]

/** Operators that take one raw value and no modifier. `isdistinct` is `IS DISTINCT FROM`. */
export const SIMPLE_OPERATORS = ['neq', 'cs', 'cd', 'ov', 'sl', 'sr', 'nxr', 'nxl', 'adj', 'isdistinct'] as const
export type SimpleOperator = (typeof SIMPLE_OPERATORS)[number]

/** Full-text search: to_tsquery, plainto_tsquery, phraseto_tsquery, websearch_to_tsquery. */
export const FTS_OPERATORS = ['fts', 'plfts', 'phfts', 'wfts'] as const
export type FtsOperator = (typeof FTS_OPERATORS)[number]

/** `is.<value>`, lower-cased (PostgREST matches these case-insensitively). */
export type IsValue = 'null' | 'not_null' | 'true' | 'false' | 'unknown'

/** `eq(any).{a,b}` is `= ANY('{a,b}')`; `like(all).{a*,b*}` is `LIKE ALL('{a%,b%}')`. */
export type Quantifier = 'any' | 'all'

/**
 * What a filter does. Values are the raw text from the URL (already percent-decoded), except:
 * `in` values are the parsed list, `is` values are one of five keywords, and `like`/`ilike`
 * patterns have every `*` replaced by `%` (PostgREST's URL-friendly wildcard; a literal `*`
 * cannot be expressed). With a quantifier the value is a PostgreSQL array literal such as
 * `{a,b}`. `cs`/`cd`/`ov`/`sl`/`sr`/`nxr`/`nxl`/`adj` values are array or range literals
 * (`{1,2}`, `[1,10)`), passed on untouched for PostgreSQL to parse.
 */
export type Operation =
  | { readonly op: QuantifiableOperator; readonly quantifier?: Quantifier; readonly value: string }
  | { readonly op: SimpleOperator; readonly value: string }
  | { readonly op: 'in'; readonly value: readonly string[] }
  | { readonly op: 'is'; readonly value: IsValue }
  | { readonly op: FtsOperator; readonly language?: string; readonly value: string }

export type FilterOperator = Operation['op']

/** `column->json=not.op.value` applied at `path`. */
export type Filter = {
  readonly kind: 'filter'
  readonly path: EmbedPath
  readonly column: string
  readonly jsonPath: JsonPath
  /** `not.` before the operator. */
  readonly negated: boolean
} & Operation

/**
 * `or=(a.eq.1,and(b.gt.2,c.is.null))`, `not.and=(...)`, `clients.or=(...)`. Children share
 * the tree's `path` (PostgREST has no per-child embedding inside one logic tree).
 */
export interface LogicTree {
  readonly kind: 'and' | 'or'
  readonly path: EmbedPath
  readonly negated: boolean
  readonly children: readonly (Filter | LogicTree)[]
}

// ---------------------------------------------------------------------------------------
// order, ranges, rpc arguments

export type OrderDirection = 'asc' | 'desc'
export type OrderNulls = 'first' | 'last'

/**
 * One `order` term: `col->json.desc.nullslast`, or with `relation` set, an order on a
 * to-one embedded resource's column: `order=client(name).desc`.
 */
export interface OrderTerm {
  readonly relation?: string
  readonly column: string
  readonly jsonPath: JsonPath
  readonly direction: OrderDirection | undefined
  readonly nulls: OrderNulls | undefined
}

/** The `order` (or `embed.order`) parameter for one level. */
export interface OrderClause {
  readonly path: EmbedPath
  readonly terms: readonly OrderTerm[]
}

/** `embed.limit` / `embed.offset` for one embedded level. `limit: null` means unbounded. */
export interface RangeClause {
  readonly path: EmbedPath
  readonly offset: number
  readonly limit: number | null
}

/** A row window: skip `offset` rows, then take `limit` (null: all remaining). */
export interface RangeWindow {
  readonly offset: number
  readonly limit: number | null
}

/** A query parameter of `GET /rpc/fn` that the caller named as a function argument. */
export interface RpcArgument {
  readonly name: string
  readonly value: string
}

// ---------------------------------------------------------------------------------------
// whole requests

/** Everything a GET/HEAD on a table, view or `/rpc/fn` asked for in its query string. */
export interface ReadRequest {
  readonly kind: 'read'
  readonly resource: string
  /** Defaults to `[{ kind: 'star' }]`; `select=` (empty) gives `[]`, as in PostgREST. */
  readonly select: readonly SelectItem[]
  /** Every level's filters, in query order; `path: []` are the root's. Conjoined with AND. */
  readonly filters: readonly Filter[]
  /** Every level's `and`/`or` trees, in query order; conjoined with the filters. */
  readonly logic: readonly LogicTree[]
  /** At most one clause per path (the first `order` parameter for a path wins). */
  readonly order: readonly OrderClause[]
  /** Embedded levels only (`path` non-empty); the root window is `limit`/`offset`. */
  readonly ranges: readonly RangeClause[]
  /** Root window after combining `limit`/`offset` with the `Range` header. */
  readonly offset: number
  readonly limit: number | null
  /** Function arguments of a GET RPC, in query order (repeated names are kept). */
  readonly rpcArguments: readonly RpcArgument[]
}

export type MutationMethod = 'POST' | 'PATCH' | 'DELETE' | 'PUT'

/**
 * The query-string part of a write. `select`, embedded filters, embedded order and embedded
 * ranges shape the representation returned with `Prefer: return=representation`. Root
 * `filters`/`logic` choose the rows to PATCH/DELETE (on POST they can only restrict an upsert's
 * update). Root `order`/`limit`/`offset` are kept for PATCH/DELETE only (PostgREST 12's
 * limited update/delete) and dropped for POST/PUT.
 */
export interface MutationRequest {
  readonly kind: 'mutation'
  readonly method: MutationMethod
  readonly resource: string
  readonly select: readonly SelectItem[]
  readonly filters: readonly Filter[]
  readonly logic: readonly LogicTree[]
  readonly order: readonly OrderClause[]
  readonly ranges: readonly RangeClause[]
  readonly offset: number
  readonly limit: number | null
  /** `columns=a,b` (POST and PATCH): which payload keys to use, in order, de-duplicated. */
  readonly columns?: readonly string[]
  /** `on_conflict=a,b` (POST): the unique columns an upsert conflicts on. */
  readonly onConflict?: readonly string[]
}

// ---------------------------------------------------------------------------------------
// Prefer header

export type PreferReturn = 'minimal' | 'headers-only' | 'representation'
export type PreferCount = 'exact' | 'planned' | 'estimated'
export type PreferResolution = 'merge-duplicates' | 'ignore-duplicates'
export type PreferMissing = 'default' | 'null'
export type PreferHandling = 'lenient' | 'strict'
export type PreferTx = 'commit' | 'rollback'

/**
 * The recognised preferences of all `Prefer` headers (RFC 7240). When a preference appears
 * more than once the first one wins. `invalid` lists what was not recognised, verbatim.
 */
export interface Preferences {
  readonly return?: PreferReturn
  readonly count?: PreferCount
  readonly resolution?: PreferResolution
  readonly missing?: PreferMissing
  readonly handling?: PreferHandling
  /** Honour only when the server allows transaction-end overrides. */
  readonly tx?: PreferTx
  readonly maxAffected?: number
  /** Deprecated PostgREST preference, still recognised by PostgREST 12. */
  readonly params?: 'single-object'
  /** Only when the caller passed the set of accepted time zone names. */
  readonly timezone?: string
  readonly invalid: readonly string[]
}
