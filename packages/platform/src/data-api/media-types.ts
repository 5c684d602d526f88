/**
 * Content negotiation for `/rest/v1`: which of PostgREST's JSON media types the `Accept`
 * header asks for. Arrays (`application/json`, `application/vnd.pgrst.array+json`) and single
 * objects (`application/vnd.pgrst.object+json`), each optionally with `nulls=stripped`.
 * Anything else (CSV, GeoJSON, plans, HTML) is PGRST107 (406), as PostgREST answers for a
 * media type it cannot produce.
 */
import { PostgrestError } from './errors.ts'

export interface MediaType {
  /** One object instead of an array (PGRST116 unless exactly one row). */
  single: boolean
  /** `nulls=stripped`: keys whose value is null are left out. */
  stripNulls: boolean
  /** The response's Content-Type. */
  contentType: string
}

const ARRAY: MediaType = { single: false, stripNulls: false, contentType: 'application/json; charset=utf-8' }

interface Range {
  type: string
  params: Map<string, string>
  q: number
}

function parseAccept(header: string): Range[] {
  return header.split(',').map((part, index) => {
    const [type = '', ...rest] = part.split(';').map((p) => p.trim())
    const params = new Map<string, string>()
    for (const p of rest) {
      const eq = p.indexOf('=')
      if (eq > 0) params.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim().replace(/^"|"$/g, ''))
    }
    const q = Number(params.get('q') ?? '1')
    return { type: type.toLowerCase(), params, q: Number.isFinite(q) ? q : 0, index }
  }).filter((r) => r.type !== '' && r.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index)
}

function mediaFor(range: Range): MediaType | null {
  const stripNulls = range.params.get('nulls') === 'stripped'
  switch (range.type) {
    case '*/*':
    case 'application/*':
    case 'application/json':
      return ARRAY
    case 'application/vnd.pgrst.array+json':
      return { single: false, stripNulls, contentType: `application/vnd.pgrst.array+json${stripNulls ? '; nulls=stripped' : ''}; charset=utf-8` }
    case 'application/vnd.pgrst.object+json':
      return { single: true, stripNulls, contentType: `application/vnd.pgrst.object+json${stripNulls ? '; nulls=stripped' : ''}; charset=utf-8` }
    default:
      return null
  }
}

/**
 * The media type to answer with.
 *
 * ```ts
 * negotiate('application/vnd.pgrst.object+json') // { single: true, stripNulls: false, ... }
 * negotiate('text/csv') // throws PGRST107
 * ```
 */
export function negotiate(accept: string | null): MediaType {
  if (accept === null || accept.trim() === '') return ARRAY
  const ranges = parseAccept(accept)
  for (const range of ranges) {
    const media = mediaFor(range)
    if (media) return media
  }
  throw new PostgrestError('PGRST107', 406, `None of these media types are available: ${accept.length > 200 ? `${accept.slice(0, 200)}…` : accept}`)
}
