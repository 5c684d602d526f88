/**
 * What `npm start` prints once the server listens: where the platform is, every deployed app
 * (not only the examples deployed by this start), and the command that creates the first
 * owner while no one but the example apps' owner exists.
 */
import type { Queryable } from './db/db.ts'
import { EXAMPLES_OWNER_EMAIL } from './deploy/examples.ts'

/** At most this many apps are listed; the banner says how many more there are. */
export const BANNER_APP_LIMIT = 20

export interface BannerApp {
  slug: string
  visibility: 'public' | 'private'
  status: string
}

export interface BannerFacts {
  /** Apps with an active release, by slug, at most BANNER_APP_LIMIT. */
  apps: BannerApp[]
  /** Deployed apps beyond the listed ones. */
  moreApps: number
  /** Whether someone other than the example apps' owner can own apps (holds an owner token or owns an app). */
  ownerExists: boolean
}

/** Reads the deployed apps and whether an owner exists (two bounded reads). */
export async function readBannerFacts(db: Queryable): Promise<BannerFacts> {
  const rows = await db.query<{ slug: string; visibility: 'public' | 'private'; status: string; total: number }>(
    `select slug, visibility, status, (count(*) over ())::int as total
       from platform.apps
      where active_release_id is not null
      order by slug
      limit $1`,
    [BANNER_APP_LIMIT],
  )
  const [owners] = await db.query<{ exists: boolean }>(
    `select exists (
       select 1 from platform.users u
        where u.email <> $1
          and (exists (select 1 from platform.owner_tokens t where t.user_id = u.id)
               or exists (select 1 from platform.apps a where a.owner_id = u.id))
     ) as exists`,
    [EXAMPLES_OWNER_EMAIL],
  )
  return {
    apps: rows.map(({ slug, visibility, status }) => ({ slug, visibility, status })),
    moreApps: Math.max(0, (rows[0]?.total ?? 0) - rows.length),
    ownerExists: owners?.exists ?? false,
  }
}

/**
 * The banner's lines.
 *
 * @example
 * console.log(startupBanner({ urls, storage: db.describe(), devMailbox: true, operatorKey: 'in .service/operator-key',
 *   facts: await readBannerFacts(db), deployedNow: new Set(['tasks']) }).join('\n'))
 */
export function startupBanner(input: {
  urls: { base: string; auth: string; app(slug: string): string }
  storage: string
  /** No SMTP_URL: sign-in mail stays in the development mailbox. */
  devMailbox: boolean
  /** Where the operator key comes from, e.g. "in .service/operator-key". */
  operatorKey: string
  facts: BannerFacts
  /** Slugs of the example apps this start deployed. */
  deployedNow: ReadonlySet<string>
}): string[] {
  const { urls, facts } = input
  const width = Math.max(8, ...facts.apps.map((app) => app.slug.length))
  return [
    `service platform on ${urls.base}  (storage: ${input.storage})`,
    `  health       ${urls.base}/v1/health`,
    `  sign-in      ${urls.auth}/sign-in`,
    ...(input.devMailbox ? [`  dev mailbox  ${urls.base}/_dev/mail/view  (no SMTP_URL: mail stays here)`] : []),
    ...facts.apps.map((app) => {
      const notes = [app.visibility, ...(app.status === 'active' ? [] : [app.status]), ...(input.deployedNow.has(app.slug) ? ['deployed now'] : [])]
      return `  app ${app.slug.padEnd(width)} ${urls.app(app.slug)}  (${notes.join(', ')})`
    }),
    ...(facts.moreApps > 0 ? [`  … and ${facts.moreApps} more deployed app${facts.moreApps === 1 ? '' : 's'}`] : []),
    `  operator key ${input.operatorKey}`,
    ...(facts.ownerExists ? [] : [`  first owner  npx service operator create-user --email you@example.com --company "Your company"`]),
  ]
}
