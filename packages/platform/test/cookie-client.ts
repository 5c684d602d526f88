/**
 * A minimal browser for HTTP-level tests: a host-only cookie jar (honouring Path and
 * Max-Age against the test clock), form posts, and redirects followed by hand so tests can
 * assert every hop. Real-browser behaviour is tested in Chromium elsewhere; this one is for
 * attacks and clock-driven cases.
 */
import type { Harness } from './harness.ts'

interface Cookie {
  value: string
  path: string
  expiresAt: number
}

export class CookieClient {
  readonly jar = new Map<string, Map<string, Cookie>>()
  readonly h: Harness

  constructor(h: Harness) {
    this.h = h
  }

  cookies(host: string): Map<string, Cookie> {
    let cookies = this.jar.get(host)
    if (!cookies) this.jar.set(host, (cookies = new Map()))
    return cookies
  }

  cookie(host: string, name: string): string | undefined {
    const cookie = this.cookies(host).get(name)
    return cookie && cookie.expiresAt > this.h.clock.now().getTime() ? cookie.value : undefined
  }

  private store(url: URL, response: Response) {
    for (const header of response.headers.getSetCookie()) {
      const [pair, ...attributes] = header.split(';').map((part) => part.trim())
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq)
      const value = pair!.slice(eq + 1)
      let path = '/'
      let expiresAt = Number.POSITIVE_INFINITY
      for (const attribute of attributes) {
        const [key, raw] = attribute.split('=')
        if (key!.toLowerCase() === 'path') path = raw ?? '/'
        if (key!.toLowerCase() === 'max-age') expiresAt = this.h.clock.now().getTime() + Number(raw) * 1000
      }
      if (value === '' || expiresAt <= this.h.clock.now().getTime()) this.cookies(url.host).delete(name)
      else this.cookies(url.host).set(name, { value, path, expiresAt })
    }
  }

  async fetch(input: string, init: RequestInit = {}): Promise<Response> {
    const url = new URL(input)
    const headers = new Headers(init.headers)
    const now = this.h.clock.now().getTime()
    const sent = [...this.cookies(url.host)]
      .filter(([, c]) => c.expiresAt > now && (url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : c.path + '/')))
      .map(([name, c]) => `${name}=${c.value}`)
    if (sent.length > 0) headers.set('cookie', sent.join('; '))
    if (!headers.has('accept')) headers.set('accept', 'text/html')
    const response = await this.h.platform.fetch(new Request(url, { ...init, headers, redirect: 'manual' }))
    this.store(url, response)
    return response
  }

  /** GET, following redirects; returns the final response and every URL visited. */
  async visit(input: string, maxHops = 10): Promise<{ response: Response; hops: string[] }> {
    const hops = [input]
    let response = await this.fetch(input)
    while (response.status >= 300 && response.status < 400 && hops.length <= maxHops) {
      const next = new URL(response.headers.get('location')!, hops.at(-1)).toString()
      hops.push(next)
      response = await this.fetch(next)
    }
    return { response, hops }
  }

  /** POSTs a form (urlencoded) with the Origin a browser would send. */
  post(input: string, fields: Record<string, string>, origin = new URL(input).origin): Promise<Response> {
    return this.fetch(input, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
      body: new URLSearchParams(fields).toString(),
    })
  }
}

/** The value of a hidden input in an HTML page. */
export function field(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html)
  if (!match) throw new Error(`no field ${name} in page`)
  return match[1]!.replace(/&amp;/g, '&')
}
