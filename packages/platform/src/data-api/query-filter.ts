/**
 * Horizontal filtering: filter keys (`clients.projects.data->>x`), operator expressions
 * (`not.eq(any).{a,b}`, `in.(1,"a,b")`, `fts(english).cat`, `is.null`) and the `and`/`or`
 * logic trees, following PostgREST 12's `pTreePath`, `pOpExpr` and `pLogicTree`.
 *
 * A top-level filter value is everything after the operator, verbatim. Inside a logic tree a
 * value ends at `,` or `)` unless it is double-quoted (`"a,b"`, backslash escapes) or a
 * brace-delimited array literal (`{1,2}`).
 */

import {
  FTS_OPERATORS,
  QUANTIFIABLE_OPERATORS,
  SIMPLE_OPERATORS,
  type EmbedPath,
  type Filter,
  type FtsOperator,
  type IsValue,
  type JsonPath,
  type LogicTree,
  type Operation,
  type QuantifiableOperator,
  type SimpleOperator,
} from './query-ast.ts'
import {
  Scanner,
  expectDelimiter,
  parseField,
  parseFieldName,
  parseJsonPath,
  readIdentifier,
  readLowerWord,
  tryQuoted,
} from './query-scanner.ts'

/** Deepest `and`/`or` nesting accepted (the parameter's own tree is level 1). */
export const MAX_LOGIC_DEPTH = 32

const QUANTIFIABLE: ReadonlySet<string> = new Set(QUANTIFIABLE_OPERATORS)
const SIMPLE: ReadonlySet<string> = new Set(SIMPLE_OPERATORS)
const FTS: ReadonlySet<string> = new Set(FTS_OPERATORS)
const IS_VALUES: ReadonlySet<string> = new Set(['null', 'not_null', 'true', 'false', 'unknown'])
const OPERATOR = 'operator (eq, gt, ...)'

export interface TreePath {
  readonly path: EmbedPath
  readonly column: string
  readonly jsonPath: JsonPath
}

/**
 * A filter (or `order`/`limit`/`offset`) key: dot-separated names, the last one the column,
 * optionally followed by a JSON path. `clients."first name"->>x` is column `first name` of
 * the embed `clients`. Unlike PostgREST, trailing garbage (`a(b)`) is an error, not ignored.
 */
export function parseTreePath(key: string): TreePath {
  const s = new Scanner(key, { what: 'tree path' })
  const names = [parseFieldName(s)]
  while (s.peek() === '.') {
    s.pos++
    names.push(parseFieldName(s))
  }
  const jsonPath = parseJsonPath(s)
  if (!s.atEnd()) s.unexpected(['delimiter (.)', '"->"', '"->>"', 'end of input'])
  const column = names.pop() ?? ''
  return { path: names, column, jsonPath }
}

type Mode = 'top' | 'logic'

interface OpExpr {
  readonly negated: boolean
  readonly operation: Operation
}

/**
 * `like`/`ilike` patterns use `*` for `%` so URLs need not percent-encode `%`; PostgREST
 * converts them when building SQL, we convert here so the AST holds the real pattern.
 */
function likePattern(op: QuantifiableOperator, value: string): string {
  return op === 'like' || op === 'ilike' ? value.replaceAll('*', '%') : value
}

function parseOpExpr(s: Scanner, mode: Mode): OpExpr {
  let negated = false
  if (s.startsWith('not.')) {
    s.pos += 4
    negated = true
  }
  const opStart = s.pos
  const word = readLowerWord(s)

  if (word === 'in') {
    expectDelimiter(s)
    return { negated, operation: { op: 'in', value: parseList(s) } }
  }

  if (word === 'is') {
    expectDelimiter(s)
    const at = s.pos
    while (s.pos < s.src.length && /[A-Za-z_]/.test(s.src.charAt(s.pos))) s.pos++
    const value = s.src.slice(at, s.pos).toLowerCase()
    if (!IS_VALUES.has(value)) s.unexpected(['null or trilean value (null, not_null, true, false, unknown)'], at)
    return { negated, operation: { op: 'is', value: value as IsValue } }
  }

  if (FTS.has(word)) {
    const op = word as FtsOperator
    let language: string | undefined
    if (s.peek() === '(') {
      s.pos++
      const at = s.pos
      language = readIdentifier(s) ?? undefined
      if (language === undefined || language === '') s.unexpected(['text search language'], at)
      if (s.peek() !== ')') s.unexpected(['")"'])
      s.pos++
    }
    expectDelimiter(s)
    const value = readValue(s, mode)
    return { negated, operation: language === undefined ? { op, value } : { op, language, value } }
  }

  if (SIMPLE.has(word)) {
    const op = word as SimpleOperator
    if (s.peek() === '(') {
      s.fail(`${op} takes no (any)/(all) modifier; only ${QUANTIFIABLE_OPERATORS.join(', ')} do`)
    }
    expectDelimiter(s)
    return { negated, operation: { op, value: readValue(s, mode) } }
  }

  if (QUANTIFIABLE.has(word)) {
    const op = word as QuantifiableOperator
    let quantifier: 'any' | 'all' | undefined
    if (s.peek() === '(') {
      s.pos++
      const at = s.pos
      const q = readLowerWord(s)
      if (q !== 'any' && q !== 'all') s.unexpected(['"any"', '"all"'], at)
      if (s.peek() !== ')') s.unexpected(['")"'])
      s.pos++
      quantifier = q
    }
    expectDelimiter(s)
    const value = likePattern(op, readValue(s, mode))
    return { negated, operation: quantifier === undefined ? { op, value } : { op, quantifier, value } }
  }

  return s.unexpected(negated ? [OPERATOR] : ['"not"', OPERATOR], opStart)
}

/** A value: the rest of the input at the top level; up to `,`/`)` in a logic tree. */
function readValue(s: Scanner, mode: Mode): string {
  if (mode === 'top') {
    const value = s.src.slice(s.pos)
    s.pos = s.src.length
    return value
  }
  const start = s.pos
  if (s.peek() === '"') {
    const quoted = tryQuoted(s)
    if (quoted !== null && (s.atEnd() || s.peek() === ',' || s.peek() === ')')) return quoted
    s.pos = start
  }
  if (s.peek() === '{') {
    let p = start + 1
    while (p < s.src.length && s.src.charAt(p) !== '{' && s.src.charAt(p) !== '}') p++
    if (s.src.charAt(p) === '}') {
      s.pos = p + 1
      return s.src.slice(start, s.pos)
    }
  }
  return readUntilComma(s)
}

function readUntilComma(s: Scanner): string {
  const start = s.pos
  while (s.pos < s.src.length) {
    const c = s.src.charCodeAt(s.pos)
    if (c === 44 || c === 41) break // , )
    s.pos++
  }
  return s.src.slice(start, s.pos)
}

/**
 * `(a,"b,c",d)`: elements split on `,`; a double-quoted element may hold `,`, `)` and, with a
 * backslash, `"` and `\`. Unquoted elements are kept verbatim (spaces included). `()` is the
 * empty list (the SQL builder must make it match nothing); `("")` is one empty string.
 */
function parseList(s: Scanner): readonly string[] {
  s.skipSpaces()
  if (s.peek() !== '(') s.unexpected(['"("'])
  s.pos++
  s.skipSpaces()
  if (s.peek() === ')') {
    s.pos++
    s.skipSpaces()
    return []
  }
  const values: string[] = []
  for (;;) {
    values.push(readListElement(s))
    if (s.peek() === ',') {
      s.pos++
      continue
    }
    if (s.peek() === ')') {
      s.pos++
      s.skipSpaces()
      return values
    }
    s.unexpected(['","', '")"'])
  }
}

function readListElement(s: Scanner): string {
  const start = s.pos
  if (s.peek() === '"') {
    const quoted = tryQuoted(s)
    if (quoted !== null) {
      s.skipSpaces()
      if (s.peek() === ',' || s.peek() === ')') return quoted
    }
    s.pos = start
  }
  return readUntilComma(s)
}

/**
 * A filter's value (`not.eq.5`); the result is completed with the key's path and column.
 * `in`/`is` values must end the input (PostgREST ignores what follows them).
 */
export function parseFilter(key: string, value: string): Filter {
  const target = parseTreePath(key)
  const s = new Scanner(value, { what: 'filter' })
  const { negated, operation } = parseOpExpr(s, 'top')
  if (!s.atEnd()) s.unexpected(['end of input'])
  return { kind: 'filter', path: target.path, column: target.column, jsonPath: target.jsonPath, negated, ...operation }
}

/** True when the key's last dot-separated word is `and` or `or` (PostgREST's test). */
export function isLogicKey(key: string): boolean {
  const last = key.slice(key.lastIndexOf('.') + 1)
  return last === 'and' || last === 'or'
}

/**
 * `or=(a.eq.1,not.and(b.gt.2,c.is.null))`, `not.or=(...)`, `clients.or=(...)`. As in
 * PostgREST, `not` anywhere in the key negates the tree and is not part of the path.
 */
export function parseLogicTree(key: string, value: string): LogicTree {
  const ks = new Scanner(key, { what: 'logic path' })
  const names = [parseFieldName(ks)]
  while (ks.peek() === '.') {
    ks.pos++
    names.push(parseFieldName(ks))
  }
  if (!ks.atEnd()) ks.unexpected(['delimiter (.)', 'end of input'])
  const op = names.pop()
  if (op !== 'and' && op !== 'or') return ks.unexpected(['logic operator (and, or)'], key.lastIndexOf('.') + 1)
  const negated = names.includes('not')
  const path = names.filter((name) => name !== 'not')

  // PostgREST parses `op + value` (`or(...)`), so its columns count the operator too.
  const s = new Scanner(value, { what: 'logic tree', columnOffset: (negated ? 'not.' : '').length + op.length })
  const children = parseLogicChildren(s, path, 1)
  s.skipSpaces()
  if (!s.atEnd()) s.unexpected(['end of input'])
  return { kind: op, path, negated, children }
}

/** `(not.)?(and|or)` followed by `(`: the start of a nested tree, never a valid filter. */
const NESTED_TREE = /(not\.)?(and|or)[ \t]*(?=\()/y

function parseLogicChildren(s: Scanner, path: EmbedPath, depth: number): (Filter | LogicTree)[] {
  if (depth > MAX_LOGIC_DEPTH) s.fail(`logic trees are nested more than ${MAX_LOGIC_DEPTH} levels deep`)
  s.skipSpaces()
  if (s.peek() !== '(') s.unexpected(['"("'])
  s.pos++
  const children: (Filter | LogicTree)[] = []
  for (;;) {
    s.skipSpaces()
    children.push(parseLogicNode(s, path, depth))
    s.skipSpaces()
    if (s.peek() === ',') {
      s.pos++
      continue
    }
    if (s.peek() === ')') {
      s.pos++
      return children
    }
    s.unexpected(['","', '")"'])
  }
}

function parseLogicNode(s: Scanner, path: EmbedPath, depth: number): Filter | LogicTree {
  NESTED_TREE.lastIndex = s.pos
  const nested = NESTED_TREE.exec(s.src)
  if (nested !== null) {
    s.pos = NESTED_TREE.lastIndex
    const kind = nested[2] === 'and' ? 'and' : 'or'
    return { kind, path, negated: nested[1] !== undefined, children: parseLogicChildren(s, path, depth + 1) }
  }
  const field = parseField(s)
  expectDelimiter(s)
  const { negated, operation } = parseOpExpr(s, 'logic')
  return { kind: 'filter', path, column: field.name, jsonPath: field.jsonPath, negated, ...operation }
}
