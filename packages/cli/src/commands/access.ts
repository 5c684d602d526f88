/**
 * `service access list|set|remove|audience <app> ...`: who holds which role on an app (Use,
 * Edit, Administer; the owner holds all three) and, for a provider app, who may use and who
 * may administer its integration. Callable by the app's owner and its Administer holders.
 */
import type { Client } from '../client.ts'
import { usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'

interface MemberView { userId: string; email: string | null; role: string; roles: string[] }
interface AudienceView {
  useScope: 'organisation' | 'people'
  usePeople: { userId: string; email: string }[]
  administerPeople: { userId: string; email: string }[]
}

const ROLES = ['use', 'edit', 'administer']

const base = (app: string) => `/v1/apps/${encodeURIComponent(app)}`

function usage(_io: Io, message = 'service access: list, set, remove or audience, and the app'): never {
  throw usageError(message, usageOf('access'))
}

function printAudience(io: Io, app: string, audience: AudienceView) {
  const names = (people: { email: string }[]) => (people.length === 0 ? '(nobody named)' : people.map((p) => p.email).join(', '))
  io.out(`integration of ${app}`)
  io.out(`  use:        ${audience.useScope === 'organisation' ? 'the whole organisation' : names(audience.usePeople)}`)
  io.out(`  administer: the owner${audience.administerPeople.length ? `, ${names(audience.administerPeople)}` : ''}`)
}

/** A comma-separated list of emails or user ids; `none` is the empty list. */
function peopleList(value: string): string[] {
  return value === 'none' ? [] : value.split(',').map((p) => p.trim()).filter((p) => p !== '')
}

export async function accessCommand(
  io: Io, client: Client, options: { action: string | undefined; app: string | undefined; rest: string[] },
): Promise<number> {
  const { action, app, rest } = options
  if (!app) return usage(io)
  switch (action) {
    case 'list': {
      if (rest.length > 0) return usage(io)
      const { owner, members } = await client.call<{ owner: MemberView; members: MemberView[] }>('GET', `${base(app)}/members`)
      printResult(io, { owner, members }, () => {
        io.out(`${(owner.email ?? owner.userId).padEnd(32)} owner (use, edit, administer)`)
        for (const m of members) io.out(`${(m.email ?? m.userId).padEnd(32)} ${m.role}`)
      })
      return 0
    }
    case 'set': {
      const [person, role] = rest
      if (!person || !role || rest.length > 2) return usage(io)
      if (!ROLES.includes(role)) usage(io, `service access set: the role is use, edit or administer, not "${role}"`)
      const { member } = await client.call<{ member: MemberView }>(
        'PUT', `${base(app)}/members/${encodeURIComponent(person)}`, { role })
      printResult(io, { member }, () => io.out(`${member.email} now holds ${member.role} on ${app} (${member.roles.join(', ')})`))
      return 0
    }
    case 'remove': {
      const [person] = rest
      if (!person || rest.length > 1) return usage(io)
      await client.call('DELETE', `${base(app)}/members/${encodeURIComponent(person)}`)
      printResult(io, { removed: person }, () => io.out(`${person} holds no role on ${app} any more`))
      return 0
    }
    case 'audience': {
      const [what, value] = rest
      let body: Record<string, unknown> | null = null
      if (what === undefined) body = null
      else if (what === 'organisation' && value === undefined) body = { useScope: 'organisation' }
      else if (what === 'people' && value !== undefined) body = { useScope: 'people', usePeople: peopleList(value) }
      else if (what === 'administer' && value !== undefined) body = { administerPeople: peopleList(value) }
      else return usage(io)
      if (rest.length > 2) return usage(io)
      const { audience } = body === null
        ? await client.call<{ audience: AudienceView }>('GET', `${base(app)}/integration-audience`)
        : await client.call<{ audience: AudienceView }>('PUT', `${base(app)}/integration-audience`, body)
      printResult(io, { audience }, () => printAudience(io, app, audience))
      return 0
    }
    default:
      return usage(io)
  }
}
