/**
 * `service grants list|add|remove <app> ...`: who may use a private app, through the owner
 * API's grants (`/v1/apps/{app}/grants`), which are the Use role under another name:
 * `grants add` is `access set <app> <email> use` for the common case of sharing an app.
 * The owner and Administer holders; the person must have signed in once.
 */
import type { Client } from '../client.ts'
import { CliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'

interface GrantView { userId: string; email: string; createdAt?: string }

const path = (app: string) => `/v1/apps/${encodeURIComponent(app)}/grants`

export async function grantsCommand(
  io: Io, client: Client, options: { action: string | undefined; app: string | undefined; rest: readonly string[] },
): Promise<number> {
  const { action, app, rest } = options
  if (app !== undefined) {
    if (action === 'list' && rest.length === 0) {
      const { grants } = await client.call<{ grants: GrantView[] }>('GET', path(app))
      printResult(io, { grants }, () => {
        if (grants.length === 0) io.out(`${app} is shared with nobody; share it with: service grants add ${app} <email>`)
        for (const g of grants) io.out(`${g.email.padEnd(32)} ${g.userId}  since ${g.createdAt}`)
      })
      return 0
    }
    if (action === 'add' && rest.length === 1) {
      const { grant } = await client.call<{ grant: GrantView }>('POST', path(app), { email: rest[0] })
      printResult(io, { grant }, () => io.out(`${grant.email} may now use ${app}`))
      return 0
    }
    if (action === 'remove' && rest.length === 1) {
      let userId = rest[0]!
      if (userId.includes('@')) {
        const { grants } = await client.call<{ grants: GrantView[] }>('GET', path(app))
        const found = grants.find((g) => g.email.toLowerCase() === userId.toLowerCase())
        if (found === undefined) throw new CliError('NOT_FOUND', `${userId} holds no grant on ${app}`, { next: `service grants list ${app}` })
        userId = found.userId
      }
      await client.call('DELETE', `${path(app)}/${encodeURIComponent(userId)}`)
      printResult(io, { removed: rest[0] }, () => io.out(`${rest[0]} may no longer use ${app}`))
      return 0
    }
  }
  throw usageError('service grants: list, add or remove, and the app', usageOf('grants'))
}
