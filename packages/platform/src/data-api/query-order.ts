/**
 * The `order` parameter (`order=a.desc.nullslast,data->>k,client(name).asc`), following
 * PostgREST 12's `pOrder`: comma-separated terms, each a column with an optional JSON path
 * or a to-one embed's column in parentheses, then an optional `.asc`/`.desc` and an
 * optional `.nullsfirst`/`.nullslast`.
 */

import type { OrderDirection, OrderNulls, OrderTerm } from './query-ast.ts'
import { Scanner, parseField, parseFieldName, parseJsonPath, readLowerWord } from './query-scanner.ts'

/**
 * Parses an `order` value.
 *
 * ```ts
 * parseOrder('age.desc.nullslast,name')
 * // [{ column: 'age', jsonPath: [], direction: 'desc', nulls: 'last' },
 * //  { column: 'name', jsonPath: [], direction: undefined, nulls: undefined }]
 * ```
 */
export function parseOrder(value: string): readonly OrderTerm[] {
  const s = new Scanner(value, { what: 'order' })
  const terms: OrderTerm[] = []
  for (;;) {
    s.skipSpaces()
    terms.push(parseOrderTerm(s))
    s.skipSpaces()
    if (s.atEnd()) return terms
    if (s.peek() !== ',') s.unexpected(['delimiter (.)', '","', 'end of input'])
    s.pos++
  }
}

function parseOrderTerm(s: Scanner): OrderTerm {
  const name = parseFieldName(s)
  let relation: string | undefined
  let column = name
  let jsonPath
  if (s.peek() === '(') {
    s.pos++
    const field = parseField(s)
    if (s.peek() !== ')') s.unexpected(['"->"', '")"'])
    s.pos++
    relation = name
    column = field.name
    jsonPath = field.jsonPath
  } else {
    jsonPath = parseJsonPath(s)
  }

  let direction: OrderDirection | undefined
  let nulls: OrderNulls | undefined
  if (s.peek() === '.') {
    s.pos++
    const at = s.pos
    const word = readLowerWord(s)
    if (word === 'asc' || word === 'desc') {
      direction = word
      if (s.peek() === '.') {
        s.pos++
        nulls = readNulls(s)
      }
    } else if (word === 'nullsfirst' || word === 'nullslast') {
      nulls = word === 'nullsfirst' ? 'first' : 'last'
    } else {
      s.unexpected(['"asc"', '"desc"', '"nullsfirst"', '"nullslast"'], at)
    }
  }
  return { ...(relation === undefined ? {} : { relation }), column, jsonPath, direction, nulls }
}

function readNulls(s: Scanner): OrderNulls {
  const at = s.pos
  const word = readLowerWord(s)
  if (word === 'nullsfirst') return 'first'
  if (word === 'nullslast') return 'last'
  return s.unexpected(['"nullsfirst"', '"nullslast"'], at)
}
