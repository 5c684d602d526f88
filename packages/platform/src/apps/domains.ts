/**
 * Custom domains (spec 5.5): a host name outside the base domain that serves one app exactly
 * as its `<slug>.<base domain>` origin does (admission, frontend, data API, Functions,
 * routes), with its own brokered browser session. Platform administrators map and unmap
 * them, because the operator holds the DNS and the TLS certificate in front; the app's owner
 * may list them. A domain belongs to at most one app. Every change announces APP_CHANGED in
 * its transaction and empties this process's edge caches after the commit, so the next
 * request here sees it and other processes within the notice delay.
 */
import type { Db, Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { announceChange, dropLocal } from '../db/notified-cache.ts'
import { isDomainName, type HostUrls } from '../http/hosts.ts'
import { APP_CHANGED, type App, type AppOwner } from './apps.ts'

/** Custom domains one app may have (the list is never paginated). */
export const MAX_DOMAINS_PER_APP = 50

export interface CustomDomain {
  domain: string
  appId: string
  createdAt: Date
  /** Null once the administrator's account is gone. */
  createdBy: string | null
}

interface DomainRow extends Record<string, unknown> {
  domain: string
  app_id: string
  created_at: Date
  created_by: string | null
}

const DOMAIN_COLUMNS = 'domain, app_id, created_at, created_by'

function fromRow(row: DomainRow): CustomDomain {
  return { domain: row.domain, appId: row.app_id, createdAt: row.created_at, createdBy: row.created_by }
}

function invalid(message: string, reason: string): ServiceError {
  return new ServiceError('VALIDATION_FAILED', message, { details: { field: 'domain', reason } })
}

/**
 * A custom domain as stored: lowercase, without a trailing dot. Refuses anything but a DNS
 * host name (a port, an IP address, a path), and the base domain and every name under it
 * (those are the platform's own origins).
 *
 * @example
 *   checkDomain('Shop.Example.com.', new URL('https://apps.example.com')) // 'shop.example.com'
 *   checkDomain('x.apps.example.com', new URL('https://apps.example.com')) // throws VALIDATION_FAILED
 */
export function checkDomain(value: unknown, baseUrl: URL): string {
  if (typeof value !== 'string' || value.length === 0) throw invalid('domain must be a host name such as shop.example.com', 'syntax')
  const name = value.toLowerCase().replace(/\.$/, '')
  if (name.length > 253) throw invalid('domain must be at most 253 characters', 'length')
  if (name.includes(':') || name.startsWith('[')) {
    throw invalid('domain must be a host name without a port or an IPv6 address; TLS and ports belong to the proxy in front', 'port_or_ip')
  }
  if (/^[0-9.]+$/.test(name) || /^(0x[0-9a-f]*|\d+)$/.test(name.split('.').at(-1) ?? '')) {
    throw invalid('domain must be a host name, not an IP address', 'ip')
  }
  if (!isDomainName(name)) {
    throw invalid('domain must be a DNS host name: two labels or more of letters, digits and inner hyphens (1 to 63 each; ' +
      'internationalised names in their xn-- form)', 'syntax')
  }
  const base = baseUrl.hostname.toLowerCase()
  if (name === base || name.endsWith(`.${base}`)) {
    throw invalid(`domain must be outside the platform's base domain ${base}: names under it are the platform's own origins`, 'base_domain')
  }
  return name
}

/** The app's custom domains, alphabetical (at most MAX_DOMAINS_PER_APP). */
export async function listDomains(db: Queryable, appId: string): Promise<CustomDomain[]> {
  const rows = await db.query<DomainRow>(
    `select ${DOMAIN_COLUMNS} from platform.custom_domains where app_id = $1 order by domain limit ${MAX_DOMAINS_PER_APP}`, [appId])
  return rows.map(fromRow)
}

/** Whether `domain` is mapped to the app (read at sign-in, where the return target is checked). */
export async function isDomainOf(db: Queryable, appId: string, domain: string): Promise<boolean> {
  const rows = await db.query('select 1 from platform.custom_domains where domain = $1 and app_id = $2', [domain, appId])
  return rows.length > 0
}

/**
 * Maps `domain` (already checked) to the app. Mapping it again to the same app changes
 * nothing (`created: false`); a domain of another app is DOMAIN_TAKEN; the app's
 * MAX_DOMAINS_PER_APP + 1st is DOMAIN_LIMIT_REACHED.
 */
export async function mapDomain(
  db: Db,
  clock: Clock,
  input: { app: App; domain: string; by: Pick<AppOwner, 'id'> },
): Promise<{ domain: CustomDomain; created: boolean }> {
  const result = await db.transaction(async (tx) => {
    // The app row's lock orders concurrent mappings of one app, so the count holds.
    await tx.query('select 1 from platform.apps where id = $1 for update', [input.app.id])
    const [inserted] = await tx.query<DomainRow>(
      `insert into platform.custom_domains (domain, app_id, created_at, created_by) values ($1, $2, $3, $4)
       on conflict (domain) do nothing returning ${DOMAIN_COLUMNS}`,
      [input.domain, input.app.id, clock.now(), input.by.id])
    if (!inserted) {
      const [existing] = await tx.query<DomainRow>(`select ${DOMAIN_COLUMNS} from platform.custom_domains where domain = $1`, [input.domain])
      if (existing && existing.app_id === input.app.id) return { domain: fromRow(existing), created: false }
      throw new ServiceError('DOMAIN_TAKEN', `${input.domain} is mapped to another app; unmap it there first`)
    }
    const [count] = await tx.query<{ n: number }>('select count(*)::int as n from platform.custom_domains where app_id = $1', [input.app.id])
    if ((count?.n ?? 0) > MAX_DOMAINS_PER_APP) {
      throw new ServiceError('DOMAIN_LIMIT_REACHED', `an app has at most ${MAX_DOMAINS_PER_APP} custom domains; unmap one first`, {
        details: { limit: MAX_DOMAINS_PER_APP },
      })
    }
    await announceChange(tx, APP_CHANGED, `domain:${input.domain}`)
    return { domain: fromRow(inserted), created: true }
  })
  if (result.created) dropLocal(db, APP_CHANGED)
  return result
}

/**
 * Unmaps `domain` from the app and ends the app sessions brokered on it, in one transaction
 * (mapped again later, it starts with no signed-in browser). False when the app has no such
 * domain.
 */
export async function unmapDomain(db: Db, clock: Clock, input: { app: App; domain: string }): Promise<boolean> {
  const removed = await db.transaction(async (tx) => {
    const rows = await tx.query('delete from platform.custom_domains where domain = $1 and app_id = $2 returning domain', [input.domain, input.app.id])
    if (rows.length === 0) return false
    await tx.query('update platform.app_sessions set revoked_at = $3 where custom_domain = $1 and app_id = $2 and revoked_at is null',
      [input.domain, input.app.id, clock.now()])
    await announceChange(tx, APP_CHANGED, `domain:${input.domain}`)
    return true
  })
  if (removed) dropLocal(db, APP_CHANGED)
  return removed
}

/** Public shape of a custom domain in API responses. */
export function domainView(domain: CustomDomain, url: string) {
  return { domain: domain.domain, url, createdAt: domain.createdAt.toISOString(), createdBy: domain.createdBy }
}

/**
 * The origin `returnTo` names when it is on a custom domain mapped to this app (with the
 * platform's scheme and port), else null: a sign-in may return there, never to a domain of
 * another app.
 *
 * @example
 *   await customReturnOrigin(db, urls, app, 'https://shop.example.com/cart') // 'https://shop.example.com'
 */
export async function customReturnOrigin(db: Queryable, urls: HostUrls, app: App, returnTo: string): Promise<string | null> {
  let url: URL
  try {
    url = new URL(returnTo)
  } catch {
    return null
  }
  const domain = url.hostname.toLowerCase()
  if (!isDomainName(domain) || url.origin !== urls.custom(domain)) return null
  return (await isDomainOf(db, app.id, domain)) ? urls.custom(domain) : null
}
