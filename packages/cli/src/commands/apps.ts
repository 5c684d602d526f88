/** `service apps list` and `service releases list <app>`. */
import type { Client } from '../client.ts'
import type { Io } from '../io.ts'

export async function appsListCommand(io: Io, client: Client): Promise<number> {
  const { apps } = await client.call<{ apps: { slug: string; visibility: string; status: string; url: string }[] }>('GET', '/v1/apps')
  if (apps.length === 0) io.out('no apps yet: service deploy <dir>')
  for (const app of apps) io.out(`${app.slug.padEnd(24)} ${app.visibility.padEnd(8)} ${app.status.padEnd(10)} ${app.url}`)
  return 0
}

export async function releasesListCommand(io: Io, client: Client, app: string | undefined): Promise<number> {
  if (!app) {
    io.err('usage: service releases list <app>')
    return 2
  }
  const { releases } = await client.call<{ releases: { version: number; status: string; createdAt: string; sdkVersion: string }[] }>(
    'GET', `/v1/apps/${encodeURIComponent(app)}/releases`)
  for (const r of releases) io.out(`${String(r.version).padStart(4)} ${r.status.padEnd(11)} sdk ${r.sdkVersion.padEnd(7)} ${r.createdAt}`)
  return 0
}
