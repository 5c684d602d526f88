/**
 * `Content-Range` and the status of a read, as PostgREST computes them (`rangeStatusHeader`,
 * `contentRangeH`): `first-last/total`, `*` for no rows or a zero total, `*` for an unknown
 * total; 206 when fewer rows than the total came back, 416 when the window starts past it.
 */

/** The header value for rows `first..last` of `total` (null: not counted). */
export function contentRange(first: number, last: number, total: number | null): string {
  const range = total !== 0 && first <= last ? `${first}-${last}` : '*'
  return `${range}/${total === null ? '*' : String(total)}`
}

/**
 * Status and `Content-Range` of a read of `rows` rows starting at `offset`.
 *
 * ```ts
 * readRange({ offset: 0, rows: 2, total: 5 }) // { status: 206, header: '0-1/5' }
 * readRange({ offset: 9, rows: 0, total: 5 }) // { status: 416, header: '*' + '/5' }
 * ```
 */
export function readRange(window: { offset: number; rows: number; total: number | null }): { status: 200 | 206 | 416; header: string } {
  const { offset, rows, total } = window
  const last = offset + rows - 1
  const header = contentRange(offset, last, total)
  if (total === null) return { status: 200, header }
  if (offset > total) return { status: 416, header }
  return { status: rows < total ? 206 : 200, header }
}
