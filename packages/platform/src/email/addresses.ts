/**
 * Email addresses, strictly: the only form accepted from an app or an SMTP client is a bare
 * `local@domain` (RFC 5321 dot-atom local part of at most 64 characters, a host name of
 * ASCII labels; no display names, quoted strings, comments, IP literals or UTF-8), so no
 * character that could end or start a header (CR, LF, `,`, `<`, `"`, `;`, space) ever gets
 * through. And the platform's address scheme: an app's mail domain is
 * `<app slug>.<EMAIL_DOMAIN>`; each declared alias is `<alias>@<mail domain>`, and mail to
 * `<alias>+<tag>@<mail domain>` is mail to the alias (docs/decisions.md "Email").
 */

/** Atoms of the local part: RFC 5322 atext, joined by single dots. */
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/
const LABEL = '[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
const DOMAIN = new RegExp(`^(?=.{1,253}$)${LABEL}(\\.${LABEL})*$`)
/** An app slug (manifest/names.ts APP_SLUG), as the first label of an app's mail domain. */
const APP_SLUG = /^(?!.*--)[a-z][a-z0-9-]{1,38}[a-z0-9]$/

/** The longest address (RFC 5321 forward-path, less its brackets). */
export const MAX_ADDRESS_CHARS = 254

export interface ParsedAddress {
  /** As given. */
  readonly local: string
  /** Lowercased. */
  readonly domain: string
  /** `local@domain`, the domain lowercased. */
  readonly address: string
}

/**
 * The address, or null when it is anything but a bare `local@domain`.
 *
 * @example
 * parseAddress('Ada@Example.com')?.address // 'Ada@example.com'
 * parseAddress('Ada <ada@example.com>') // null
 * parseAddress('ada@example.com\r\nBcc: eve@example.com') // null
 */
export function parseAddress(value: string): ParsedAddress | null {
  if (value.length === 0 || value.length > MAX_ADDRESS_CHARS) return null
  const at = value.lastIndexOf('@')
  if (at <= 0) return null
  const local = value.slice(0, at)
  const domain = value.slice(at + 1).toLowerCase()
  if (local.length > 64 || !LOCAL_PART.test(local) || !DOMAIN.test(domain)) return null
  return { local, domain, address: `${local}@${domain}` }
}

/**
 * An app's mail domain.
 *
 * @example
 * appMailDomain('tasks', 'example.com') // 'tasks.example.com'
 */
export function appMailDomain(slug: string, emailDomain: string): string {
  return `${slug}.${emailDomain}`
}

/**
 * An alias's address.
 *
 * @example
 * aliasAddress({ alias: 'support', slug: 'tasks', emailDomain: 'example.com' }) // 'support@tasks.example.com'
 */
export function aliasAddress(input: { alias: string; slug: string; emailDomain: string }): string {
  return `${input.alias}@${appMailDomain(input.slug, input.emailDomain)}`
}

/** Where an inbound recipient points: an app by slug and an alias of it (lowercased), with the `+tag` if any. */
export interface InboundTarget {
  readonly slug: string
  readonly alias: string
  readonly tag: string | null
  /** The recipient as given, its domain lowercased. */
  readonly address: string
}

/**
 * The app and alias an inbound recipient names, or null when it is not `<alias>[+<tag>]@<slug>.<EMAIL_DOMAIN>`.
 * Whether the app exists and declares the alias is for the caller to check.
 *
 * @example
 * inboundTarget('Support+T-42@tasks.example.com', 'example.com') // { slug: 'tasks', alias: 'support', tag: 'T-42', address: 'Support+T-42@tasks.example.com' }
 */
export function inboundTarget(recipient: string, emailDomain: string): InboundTarget | null {
  const parsed = parseAddress(recipient)
  if (parsed === null) return null
  const suffix = `.${emailDomain}`
  if (!parsed.domain.endsWith(suffix)) return null
  const slug = parsed.domain.slice(0, -suffix.length)
  if (!APP_SLUG.test(slug)) return null
  const plus = parsed.local.indexOf('+')
  const alias = (plus === -1 ? parsed.local : parsed.local.slice(0, plus)).toLowerCase()
  if (alias.length === 0) return null
  return { slug, alias, tag: plus === -1 ? null : parsed.local.slice(plus + 1), address: parsed.address }
}
