/**
 * `service dev delete <name>`: deletes a development namespace of an app (`--app <app>`,
 * else app.id of ./service.yaml) with its schema, data, releases, logs and secrets.
 */
import type { Client } from '../client.ts'
import type { Io } from '../io.ts'
import { appTarget } from './app-target.ts'

export async function devCommand(io: Io, client: Client, options: { action: string | undefined; name: string | undefined; app: string | undefined }): Promise<number> {
  if (options.action !== 'delete' || !options.name) {
    io.err('usage: service dev delete <name> [--app <app>]')
    return 2
  }
  const target = appTarget({ app: options.app, dev: options.name })
  if (typeof target === 'string') {
    io.err(`service dev delete: ${target}`)
    return 2
  }
  await client.call('DELETE', target.prefix)
  io.out(`deleted ${target.label}: its schema, data, releases, logs and secrets are gone`)
  return 0
}
