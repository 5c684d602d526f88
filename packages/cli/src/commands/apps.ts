/** `service apps list` and `service releases list <app> [--dev <name>]`. */
import type { Client } from '../client.ts'
import { usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'

interface AppView { id: string; slug: string; visibility: string; status: string; url: string }
interface ReleaseView { version: number; status: string; createdAt: string; sdkVersion: string }

export async function appsListCommand(io: Io, client: Client): Promise<number> {
  const { apps } = await client.call<{ apps: AppView[] }>('GET', '/v1/apps')
  printResult(io, { apps }, () => {
    if (apps.length === 0) io.out('no apps yet: service init <dir>, then service deploy <dir>')
    for (const app of apps) io.out(`${app.slug.padEnd(24)} ${app.visibility.padEnd(8)} ${app.status.padEnd(10)} ${app.url}`)
  })
  return 0
}

export async function releasesListCommand(io: Io, client: Client, options: { app: string | undefined; dev: string | undefined }): Promise<number> {
  const { app, dev } = options
  if (!app) throw usageError('service releases list: name the app', usageOf('releases'))
  const { releases } = await client.call<{ releases: ReleaseView[] }>(
    'GET', `/v1/apps/${encodeURIComponent(app)}${dev ? `/dev/${encodeURIComponent(dev)}` : ''}/releases`)
  printResult(io, { releases }, () => {
    if (releases.length === 0) io.out(`no releases of ${app}${dev ? ` in development namespace ${dev}` : ''} yet`)
    for (const r of releases) io.out(`${String(r.version).padStart(4)} ${r.status.padEnd(11)} sdk ${r.sdkVersion.padEnd(7)} ${r.createdAt}`)
  })
  return 0
}
