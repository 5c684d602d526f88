/**
 * The cursor and the lexical pieces every query-parameter parser shares: field names
 * (PostgREST's identifier rules, double-quoted names with backslash escapes), JSON paths
 * (`->key`, `->>0`), casts and the error reporting that produces PostgREST's
 * `"failed to parse <what> (<input>)" (line 1, column N)` messages.
 *
 * The parsers are hand-written, single pass and free of unbounded backtracking, so their
 * cost grows linearly with the input; nesting is bounded by the callers (see
 * `MAX_EMBED_DEPTH` and `MAX_LOGIC_DEPTH`), never by the JavaScript stack.
 */

import type { JsonArrow, JsonPath, JsonPathStep } from './query-ast.ts'
import { syntaxError } from './parse-errors.ts'

export interface ScanTarget {
  /** What is parsed, as PostgREST names it in messages: `filter`, `select parameter`, ... */
  readonly what: string
  /** Characters PostgREST parses before this text (logic trees are parsed as `or(...)`). */
  readonly columnOffset?: number
}

/** Parsec's label for a field name, kept so PostgREST clients see familiar details. */
export const FIELD_NAME = 'field name (* or [a..z0..9_$])'

export class Scanner {
  readonly src: string
  readonly what: string
  readonly columnOffset: number
  pos = 0

  constructor(src: string, target: ScanTarget) {
    this.src = src
    this.what = target.what
    this.columnOffset = target.columnOffset ?? 0
  }

  atEnd(): boolean {
    return this.pos >= this.src.length
  }

  /** The UTF-16 unit `ahead` positions on, or '' past the end. */
  peek(ahead = 0): string {
    return this.src.charAt(this.pos + ahead)
  }

  startsWith(text: string, at = this.pos): boolean {
    return this.src.startsWith(text, at)
  }

  /** PostgREST's `ws`: spaces and tabs only. */
  skipSpaces(): void {
    while (this.pos < this.src.length) {
      const c = this.src.charCodeAt(this.pos)
      if (c !== 32 && c !== 9) return
      this.pos++
    }
  }

  /** Throws PGRST100 with `details` about position `at`. */
  fail(details: string, at = this.pos): never {
    throw syntaxError(this.what, this.src, this.column(at), details)
  }

  /** Throws PGRST100 as Parsec words it: `unexpected "x" expecting a, b or c`. */
  unexpected(expecting: readonly string[], at = this.pos): never {
    const found = at >= this.src.length ? 'end of input' : JSON.stringify(String.fromCodePoint(this.src.codePointAt(at) ?? 0))
    return this.fail(`unexpected ${found} expecting ${joinOr(expecting)}`, at)
  }

  /** 1-based column in code points, as Parsec counts (computed only when failing). */
  private column(at: number): number {
    let count = 0
    for (let i = 0; i < at && i < this.src.length; i++) {
      const c = this.src.charCodeAt(i)
      // A high surrogate followed by a low one is one code point.
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < at) {
        const d = this.src.charCodeAt(i + 1)
        if (d >= 0xdc00 && d <= 0xdfff) i++
      }
      count++
    }
    return count + 1 + this.columnOffset
  }
}

function joinOr(items: readonly string[]): string {
  if (items.length <= 1) return items.join('')
  return `${items.slice(0, -1).join(', ')} or ${items[items.length - 1] ?? ''}`
}

const LETTER = /^\p{L}$/u

/** Parsec's `letter <|> digit <|> oneOf "_ $"`: Unicode letters, ASCII digits, `_`, space, `$`. */
function isIdentifierCodePoint(cp: number): boolean {
  if (cp < 128) {
    return (
      (cp >= 97 && cp <= 122) || (cp >= 65 && cp <= 90) || (cp >= 48 && cp <= 57) || cp === 95 || cp === 32 || cp === 36
    )
  }
  return LETTER.test(String.fromCodePoint(cp))
}

/** PostgREST's `pIdentifier`: one or more identifier characters, trimmed. Null if none. */
export function readIdentifier(s: Scanner): string | null {
  const start = s.pos
  while (s.pos < s.src.length) {
    const cp = s.src.codePointAt(s.pos) ?? 0
    if (!isIdentifierCodePoint(cp)) break
    s.pos += cp > 0xffff ? 2 : 1
  }
  return s.pos === start ? null : s.src.slice(start, s.pos).trim()
}

/** Reads `[a-z]+` (operators, keywords); '' when none. */
export function readLowerWord(s: Scanner): string {
  const start = s.pos
  while (s.pos < s.src.length) {
    const c = s.src.charCodeAt(s.pos)
    if (c < 97 || c > 122) break
    s.pos++
  }
  return s.src.slice(start, s.pos)
}

/**
 * Parts joined by `-` where the dash does not start `->` (so `my-col->x` is the column
 * `my-col` with a JSON path). Null when the first part is missing.
 */
function sepByDash(s: Scanner, readPart: (s: Scanner) => string | null, expecting: string): string | null {
  const first = readPart(s)
  if (first === null) return null
  const parts = [first]
  while (s.peek() === '-' && s.peek(1) !== '>') {
    s.pos++
    const next = readPart(s)
    if (next === null) s.unexpected([expecting])
    parts.push(next)
  }
  return parts.join('-')
}

/**
 * A double-quoted string: `"` ... `"` where a backslash makes the next character literal
 * (`\"`, `\\`). Returns null, with the cursor where it was, when the quote is not closed.
 */
export function tryQuoted(s: Scanner): string | null {
  const start = s.pos
  let p = start + 1
  let out = ''
  let chunk = p
  while (p < s.src.length) {
    const c = s.src.charCodeAt(p)
    if (c === 34) {
      s.pos = p + 1
      return out + s.src.slice(chunk, p)
    }
    if (c === 92) {
      out += s.src.slice(chunk, p)
      p++
      if (p >= s.src.length) break
      const cp = s.src.codePointAt(p) ?? 0
      const width = cp > 0xffff ? 2 : 1
      out += s.src.slice(p, p + width)
      p += width
      chunk = p
    } else {
      p++
    }
  }
  return null
}

/** A double-quoted string, failing at the end of input when it is not closed. */
export function parseQuoted(s: Scanner): string {
  const value = tryQuoted(s)
  if (value === null) {
    s.pos = s.src.length
    s.unexpected(['"\\""'])
  }
  return value
}

/**
 * A column, relation, alias or hint name: `"quoted"` (any characters, may not be empty) or
 * identifier characters with inner dashes, trimmed. Empty names are rejected.
 */
export function parseFieldName(s: Scanner): string {
  const start = s.pos
  let name: string | null
  if (s.peek() === '"') {
    name = parseQuoted(s)
  } else {
    name = sepByDash(s, readIdentifier, 'letter or digit')
    if (name === null) s.unexpected([FIELD_NAME])
  }
  if (name === '') s.fail(`empty name expecting ${FIELD_NAME}`, start)
  return name
}

/** True when `c` can begin a field name (identifier character or `"`). */
export function canStartFieldName(s: Scanner): boolean {
  if (s.atEnd()) return false
  if (s.peek() === '"') return true
  return isIdentifierCodePoint(s.src.codePointAt(s.pos) ?? 0)
}

/** PostgREST's JSON key characters: anything but `( - : . , > )`, trimmed. */
function readJsonKeyPart(s: Scanner): string | null {
  const start = s.pos
  while (s.pos < s.src.length) {
    const c = s.src.charCodeAt(s.pos)
    // ( ) - : . , >
    if (c === 40 || c === 41 || c === 45 || c === 58 || c === 46 || c === 44 || c === 62) break
    s.pos++
  }
  return s.pos === start ? null : s.src.slice(start, s.pos).trim()
}

/**
 * What may follow an array index for it to be one (else `->1a` is the key `1a`). PostgREST
 * lists `->`, `::`, `.`, `,` and the end; `)` and spaces are added so `rel(data->0)` indexes
 * the array like `data->0` does at the top level (PostgREST 12 reads it as the key "0").
 */
function isIndexEnd(s: Scanner, at: number): boolean {
  if (at >= s.src.length) return true
  const c = s.src.charAt(at)
  return c === '.' || c === ',' || c === ')' || c === ' ' || c === '\t' || s.startsWith('->', at) || s.startsWith('::', at)
}

function parseJsonOperand(s: Scanner): string | number {
  const start = s.pos
  let p = start
  if (s.src.charAt(p) === '-') p++
  const digits = p
  while (p < s.src.length && s.src.charCodeAt(p) >= 48 && s.src.charCodeAt(p) <= 57) p++
  if (p > digits && isIndexEnd(s, p)) {
    const index = Number(s.src.slice(start, p))
    if (!Number.isSafeInteger(index)) s.fail('JSON array index out of range', start)
    s.pos = p
    return index + 0 // turns -0 into 0
  }
  if (s.peek() === '"') return parseQuoted(s)
  const key = sepByDash(s, readJsonKeyPart, 'JSON key')
  if (key === null) s.unexpected(['JSON key or array index (any character but .,:>() or a quoted key)'])
  return key
}

/** Zero or more `->operand` / `->>operand` steps. */
export function parseJsonPath(s: Scanner): JsonPath {
  const steps: JsonPathStep[] = []
  for (;;) {
    let op: JsonArrow
    if (s.startsWith('->>')) op = '->>'
    else if (s.startsWith('->')) op = '->'
    else return steps
    s.pos += op.length
    steps.push({ op, key: parseJsonOperand(s) })
  }
}

/** PostgREST's `pField`: optional spaces, a field name, its JSON path, optional spaces. */
export function parseField(s: Scanner): { name: string; jsonPath: JsonPath } {
  s.skipSpaces()
  const name = parseFieldName(s)
  const jsonPath = parseJsonPath(s)
  s.skipSpaces()
  return { name, jsonPath }
}

/** `::type` when present (identifier characters, e.g. `text`, `character varying`). */
export function parseCast(s: Scanner): string | undefined {
  if (!s.startsWith('::')) return undefined
  s.pos += 2
  const at = s.pos
  const type = readIdentifier(s)
  if (type === null) s.unexpected(['letter or digit'])
  if (type === '') s.fail('empty cast type expecting letter or digit', at)
  return type
}

/** `.` between a field and its operator, or between order modifiers. */
export function expectDelimiter(s: Scanner): void {
  if (s.peek() !== '.') s.unexpected(['delimiter (.)'])
  s.pos++
}
