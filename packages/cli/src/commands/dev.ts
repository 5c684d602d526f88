/**
 * `service dev delete <name>`: deletes a development namespace of an app (`--app <app>`,
 * else app.id of ./service.yaml) with its schema, data, releases, logs and secrets. It asks
 * first on a terminal; `--yes` confirms without asking, and without a terminal nothing is
 * deleted unless `--yes` is given (a script must say so).
 */
import type { Client } from '../client.ts'
import type { Io } from '../io.ts'
import { appTarget } from './app-target.ts'

export interface DevOptions {
  readonly action: string | undefined
  readonly name: string | undefined
  readonly app: string | undefined
  /** --yes: delete without asking. */
  readonly yes: boolean
}

export async function devCommand(io: Io, client: Client, options: DevOptions): Promise<number> {
  if (options.action !== 'delete' || !options.name) {
    io.err('usage: service dev delete <name> [--app <app>] [--yes]')
    return 2
  }
  const target = appTarget({ app: options.app, dev: options.name })
  if (typeof target === 'string') {
    io.err(`service dev delete: ${target}`)
    return 2
  }
  if (!options.yes) {
    if (!io.confirm) {
      io.err(`service dev delete: this deletes ${target.label} with its schema, data, releases, logs and secrets;`
        + ' there is no terminal to ask on, so confirm with --yes. Nothing was deleted.')
      return 2
    }
    if (!(await io.confirm(`delete ${target.label} with its schema, data, releases, logs and secrets?`))) {
      io.err('nothing was deleted')
      return 1
    }
  }
  await client.call('DELETE', target.prefix)
  io.out(`deleted ${target.label}: its schema, data, releases, logs and secrets are gone`)
  return 0
}
