/**
 * The `select` parameter: columns (`alias:col->json::cast`), `*`, embedded resources
 * (`alias:rel!hint!inner(...)`) and spreads (`...rel(...)`), following PostgREST 12's
 * `pFieldForest`. Aggregates (`count()`, `col.sum()`) parse but are refused with PGRST123
 * because this platform does not enable them (PostgREST's `db-aggregates-enabled = false`).
 */

import type { EmbedSelect, SelectItem } from './query-ast.ts'
import { aggregatesNotAllowed } from './parse-errors.ts'
import { Scanner, parseCast, parseFieldName, parseJsonPath, readLowerWord } from './query-scanner.ts'

/** Deepest embedding accepted: `a(b(c(...)))` with more levels fails with PGRST100. */
export const MAX_EMBED_DEPTH = 16

const AGGREGATES: ReadonlySet<string> = new Set(['sum', 'avg', 'count', 'max', 'min'])

interface SelectState {
  /** The first aggregate seen; refused once the whole parameter has parsed. */
  aggregate: string | undefined
}

/**
 * Parses a `select` value. `''` gives `[]` (PostgREST selects no columns).
 *
 * ```ts
 * parseSelect('id,author:users!author_id(name)')
 * // [{ kind: 'column', name: 'id', jsonPath: [] },
 * //  { kind: 'embed', relation: 'users', alias: 'author', hint: 'author_id', inner: false, left: false,
 * //    spread: false, select: [{ kind: 'column', name: 'name', jsonPath: [] }] }]
 * ```
 */
export function parseSelect(input: string): readonly SelectItem[] {
  const { items, aggregate } = parseSelectTree(input)
  if (aggregate !== undefined) throw aggregatesNotAllowed(aggregate)
  return items
}

/**
 * Parses a `select` value and reports the first aggregate instead of refusing it, so the
 * caller can refuse it after every other parameter has parsed: PostgREST raises PGRST123
 * while planning, so any PGRST100 in the request wins over it.
 */
export function parseSelectTree(input: string): { items: readonly SelectItem[]; aggregate: string | undefined } {
  const s = new Scanner(input, { what: 'select parameter' })
  const state: SelectState = { aggregate: undefined }
  const items = parseForest(s, 0, state)
  return { items, aggregate: state.aggregate }
}

function parseForest(s: Scanner, depth: number, state: SelectState): SelectItem[] {
  const nested = depth > 0
  if (nested ? s.peek() === ')' : s.atEnd()) return []
  const items: SelectItem[] = []
  for (;;) {
    items.push(parseItem(s, depth, state))
    s.skipSpaces()
    if (s.peek() === ',') {
      s.pos++
      continue
    }
    if (nested ? s.peek() === ')' : s.atEnd()) return items
    s.unexpected(nested ? ['","', '")"'] : ['","', 'end of input'])
  }
}

function expectItemEnd(s: Scanner, depth: number): void {
  s.skipSpaces()
  const c = s.peek()
  if (c === ',' || (depth > 0 && c === ')') || (depth === 0 && s.atEnd())) return
  s.unexpected(depth > 0 ? ['"->"', '"::"', '","', '")"'] : ['"->"', '"::"', '","', 'end of input'])
}

function parseItem(s: Scanner, depth: number, state: SelectState): SelectItem {
  s.skipSpaces()

  if (s.startsWith('...')) {
    s.pos += 3
    const relation = parseFieldName(s)
    const params = parseEmbedParams(s)
    if (s.peek() !== '(') s.unexpected(['"!"', '"("'])
    return parseEmbedBody(s, depth, state, { relation, ...params, spread: true })
  }

  if (s.peek() === '*') {
    s.pos++
    expectItemEnd(s, depth)
    return { kind: 'star' }
  }

  let nameStart = s.pos
  let name = parseFieldName(s)
  let alias: string | undefined
  if (s.peek() === ':' && s.peek(1) !== ':') {
    s.pos++
    s.skipSpaces()
    alias = name
    nameStart = s.pos
    name = parseFieldName(s)
  }

  // `count()` is PostgREST's whole-row count aggregate; `count` can never name an embed.
  if (name === 'count' && s.peek() === '(') {
    if (!s.startsWith('count()', nameStart)) s.unexpected(['"->"', '"::"', '","', 'end of input'])
    s.pos += 2
    parseCast(s)
    expectItemEnd(s, depth)
    state.aggregate ??= 'count()'
    return { kind: 'column', name: '*', jsonPath: [] }
  }

  const params = parseEmbedParams(s)
  if (s.peek() === '(') {
    return parseEmbedBody(s, depth, state, { relation: name, ...(alias === undefined ? {} : { alias }), ...params, spread: false })
  }
  if (params.hint !== undefined || params.inner || params.left) s.unexpected(['"!"', '"("'])

  const jsonPath = parseJsonPath(s)
  const cast = parseCast(s)
  if (s.peek() === '.') {
    const at = s.pos + 1
    s.pos++
    const fn = readLowerWord(s)
    if (!AGGREGATES.has(fn) || !s.startsWith('()')) s.unexpected(['aggregate function (sum, avg, count, max, min) followed by "()"'], at)
    s.pos += 2
    parseCast(s)
    state.aggregate ??= `${fn}()`
  }
  expectItemEnd(s, depth)
  return {
    kind: 'column',
    name,
    jsonPath,
    ...(cast === undefined ? {} : { cast }),
    ...(alias === undefined ? {} : { alias }),
  }
}

interface EmbedParams {
  hint?: string
  inner: boolean
  left: boolean
}

/**
 * Up to two `!word` after a relation: `!inner` or `!left` set the join, anything else is the
 * hint (a foreign key, column or junction name). A quoted `!"inner"` is a hint. When both
 * words are of one kind the first wins, as in PostgREST.
 */
function parseEmbedParams(s: Scanner): EmbedParams {
  let hint: string | undefined
  let join: 'inner' | 'left' | undefined
  for (let i = 0; i < 2 && s.peek() === '!'; i++) {
    s.pos++
    const quoted = s.peek() === '"'
    const word = parseFieldName(s)
    if (!quoted && (word === 'inner' || word === 'left')) join ??= word
    else hint ??= word
  }
  return { ...(hint === undefined ? {} : { hint }), inner: join === 'inner', left: join === 'left' }
}

type EmbedHeader = Omit<EmbedSelect, 'kind' | 'select'>

function parseEmbedBody(s: Scanner, depth: number, state: SelectState, header: EmbedHeader): EmbedSelect {
  if (depth + 1 > MAX_EMBED_DEPTH) s.fail(`embedded resources are nested more than ${MAX_EMBED_DEPTH} levels deep`)
  s.pos++ // (
  const select = parseForest(s, depth + 1, state)
  s.pos++ // ) — parseForest returns only in front of it
  expectItemEnd(s, depth)
  return { kind: 'embed', ...header, select }
}
