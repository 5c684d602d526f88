/**
 * Apps: a slug (its origin is `<slug>.<base domain>`), a visibility, an owner in one
 * organisation, a status and the release that serves. Owners see and manage their own apps;
 * an app someone may not see answers exactly like one that does not exist.
 */
import { first, type Db, type Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { isAppSlug, isUuid } from '../lib/ids.ts'
import { createNotifiedCache } from '../db/notified-cache.ts'

export type Visibility = 'public' | 'private'
export type AppStatus = 'active' | 'paused' | 'suspended' | 'archived'

export interface App {
  id: string
  /** Null for a personal app of someone who has no company yet. */
  organisationId: string | null
  ownerId: string
  slug: string
  name: string
  visibility: Visibility
  status: AppStatus
  /** Why a paused app is paused, e.g. `verification_required`. */
  pausedReason: string | null
  activeReleaseId: string | null
  createdAt: Date
  updatedAt: Date
}

interface AppRow extends Record<string, unknown> {
  id: string
  organisation_id: string | null
  owner_id: string
  slug: string
  name: string
  visibility: Visibility
  status: AppStatus
  paused_reason: string | null
  active_release_id: string | null
  created_at: Date
  updated_at: Date
}

const APP_COLUMNS = 'id, organisation_id, owner_id, slug, name, visibility, status, paused_reason, active_release_id, created_at, updated_at'

function fromRow(row: AppRow): App {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    ownerId: row.owner_id,
    slug: row.slug,
    name: row.name,
    visibility: row.visibility,
    status: row.status,
    pausedReason: row.paused_reason,
    activeReleaseId: row.active_release_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

/** Host labels the platform itself uses under the base domain. */
export const RESERVED_SLUGS: ReadonlySet<string> = new Set([
  'auth', 'api', 'www', 'admin', 'dashboard', 'mail', 'mcp', 'static', 'cdn', 'status', 'docs',
])

export function checkSlug(slug: unknown): string {
  if (typeof slug !== 'string' || !isAppSlug(slug) || slug.includes('--')) {
    throw new ServiceError('VALIDATION_FAILED',
      'slug must be 3 to 40 lowercase letters, digits or single hyphens, starting with a letter', {
        details: { field: 'slug' },
      })
  }
  if (RESERVED_SLUGS.has(slug)) {
    throw new ServiceError('VALIDATION_FAILED', `slug "${slug}" is reserved by the platform`, { details: { field: 'slug' } })
  }
  return slug
}

export function checkVisibility(value: unknown): Visibility {
  if (value !== 'public' && value !== 'private') {
    throw new ServiceError('VALIDATION_FAILED', 'visibility must be "public" or "private"', { details: { field: 'visibility' } })
  }
  return value
}

/**
 * Who owns apps, as this feature needs it: identity's User is one. Apps stand below identity
 * (identity looks apps up), so they name only these fields, not identity's type.
 */
export interface AppOwner {
  readonly id: string
  readonly organisationId: string | null
}

/** The levels a person can hold on an app, lowest first (what each allows is identity's rule). */
export type AppRole = 'use' | 'edit' | 'administer'

/**
 * The role rules the owner API over apps applies. They are identity's (who holds which level
 * right now), and identity stands above apps, so the composition root hands them in.
 */
export interface AppAccess<U extends AppOwner> {
  /** The app when `user` holds at least `role` on it; APP_NOT_FOUND or FORBIDDEN otherwise. */
  appForRole(user: U, idOrSlug: string, role: AppRole): Promise<App>
  /** The level `user` holds on `app` given their stored grant (null: none), or null. */
  roleFrom(input: { app: App; user: U; grant: AppRole | null }): AppRole | null
}

export async function createApp(
  db: Queryable,
  owner: AppOwner,
  input: { slug: string; name?: string | undefined; visibility: Visibility },
): Promise<App> {
  const slug = checkSlug(input.slug)
  const name = (input.name ?? slug).trim()
  if (name.length < 1 || name.length > 80) {
    throw new ServiceError('VALIDATION_FAILED', 'name must be 1 to 80 characters', { details: { field: 'name' } })
  }
  const rows = await db.query<AppRow>(
    `insert into platform.apps (organisation_id, owner_id, slug, name, visibility)
     values ($1, $2, $3, $4, $5) on conflict (slug) do nothing returning ${APP_COLUMNS}`,
    [owner.organisationId, owner.id, slug, name, checkVisibility(input.visibility)],
  )
  if (!rows[0]) throw new ServiceError('APP_SLUG_TAKEN', `an app with the slug "${slug}" already exists`)
  return fromRow(rows[0])
}

/**
 * The apps `user` owns or holds a stored grant on, each with the grant's level (null for an
 * app of their own), oldest first, at most 1000. Whether a grant counts right now (the person
 * confirmed, Edit only inside the organisation) is identity's rule, `roleFrom`: the caller
 * applies it. The level is spelled here because apps stand below identity.
 */
export async function listAppsOwnedOrGranted(
  db: Queryable, user: Pick<AppOwner, 'id'>,
): Promise<Array<{ app: App; grant: AppRole | null }>> {
  const rows = await db.query<AppRow & { grant_role: AppRole | null }>(
    `select ${APP_COLUMNS.split(', ').map((column) => `a.${column}`).join(', ')}, g.role as grant_role
       from platform.apps a left join platform.app_grants g on g.app_id = a.id and g.user_id = $1
      where a.owner_id = $1 or g.user_id is not null
      order by a.created_at, a.slug limit 1000`, [user.id])
  return rows.map((row) => ({ app: fromRow(row), grant: row.owner_id === user.id ? null : row.grant_role }))
}


/** An app the user owns, by id or slug; APP_NOT_FOUND otherwise (also for others' apps). */
export async function getOwnedApp(db: Queryable, user: Pick<AppOwner, 'id'>, idOrSlug: string): Promise<App> {
  const column = isUuid(idOrSlug) ? 'id' : 'slug'
  const row = await first<AppRow>(db,
    `select ${APP_COLUMNS} from platform.apps where ${column} = $1 and owner_id = $2`, [idOrSlug, user.id])
  if (!row) throw new ServiceError('APP_NOT_FOUND', `no app "${idOrSlug}" among your apps`)
  return fromRow(row)
}

export async function findAppBySlug(db: Queryable, slug: string): Promise<App | null> {
  const row = await first<AppRow>(db, `select ${APP_COLUMNS} from platform.apps where slug = $1`, [slug])
  return row ? Object.freeze(fromRow(row)) : null
}

/** Any app by id or slug, whoever owns it (for platform administrators); null when none. */
export async function findAppByIdOrSlug(db: Queryable, idOrSlug: string): Promise<App | null> {
  const column = isUuid(idOrSlug) ? 'id' : 'slug'
  const row = await first<AppRow>(db, `select ${APP_COLUMNS} from platform.apps where ${column} = $1`, [idOrSlug])
  return row ? fromRow(row) : null
}

/** The app a custom domain (lowercase, as `classifyHost` gives it) is mapped to, or null. */
export async function findAppByDomain(db: Queryable, domain: string): Promise<App | null> {
  const row = await first<AppRow>(db,
    `select ${APP_COLUMNS.split(', ').map((column) => `a.${column}`).join(', ')}
       from platform.custom_domains d join platform.apps a on a.id = d.app_id where d.domain = $1`, [domain])
  return row ? Object.freeze(fromRow(row)) : null
}

/**
 * The NOTIFY channel for changes to what an app origin resolves at its edge: the app row
 * (status, visibility, release, owner, company), its custom domains, its access tokens, its
 * owner's account.
 * Whoever changes one announces it in the same transaction (`announceChange` in
 * db/notified-cache.ts) and calls `dropLocal(db, APP_CHANGED)` after the commit.
 */
export const APP_CHANGED = 'platform_app_changed'

export interface AppDirectory {
  /** `findAppBySlug`, served from memory until the next change notice. */
  bySlug(slug: string): Promise<App | null>
  /** `findAppByDomain`, served from memory until the next change notice. */
  byDomain(domain: string): Promise<App | null>
  listening(): Promise<void>
  close(): Promise<void>
}

/**
 * Apps by slug and by custom domain for the request path, cached in process (see
 * db/notified-cache.ts): one cache, keyed `slug:` or `domain:`, emptied by any APP_CHANGED
 * notice, which a change to an app or to its custom domains sends.
 */
export function createAppDirectory(deps: { db: Db; clock: Clock; maxEntries?: number }): AppDirectory {
  const cache = createNotifiedCache<App>({
    db: deps.db, clock: deps.clock, channel: APP_CHANGED, maxEntries: deps.maxEntries ?? 10_000, maxAgeMs: 30_000,
  })
  return {
    bySlug: (slug) => cache.get(`slug:${slug}`, () => findAppBySlug(deps.db, slug)),
    byDomain: (domain) => cache.get(`domain:${domain}`, () => findAppByDomain(deps.db, domain)),
    listening: () => cache.listening(),
    close: () => cache.close(),
  }
}

/** Public shape of an app in API responses. */
export function appView(app: App, appUrl: string) {
  return {
    id: app.id,
    slug: app.slug,
    name: app.name,
    visibility: app.visibility,
    status: app.status,
    activeReleaseId: app.activeReleaseId,
    url: appUrl,
    createdAt: app.createdAt.toISOString(),
    updatedAt: app.updatedAt.toISOString(),
  }
}

/**
 * Every app `user` holds a role on right now, with that role and whether they own it (the
 * owner API's app list and the MCP tool `list_apps`).
 *
 * @example
 * const apps = await appsOf({ db, urls, access }, user) // [{ id, slug, ..., role: 'administer', owned: true }]
 */
export async function appsOf<U extends AppOwner>(
  deps: { db: Queryable; urls: { app(slug: string): string }; access: Pick<AppAccess<U>, 'roleFrom'> }, user: U,
) {
  const rows = await listAppsOwnedOrGranted(deps.db, user)
  return rows.flatMap(({ app, grant }) => {
    const role = deps.access.roleFrom({ app, user, grant })
    return role === null ? [] : [{ ...appView(app, deps.urls.app(app.slug)), role, owned: app.ownerId === user.id }]
  })
}
