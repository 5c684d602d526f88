/**
 * `service login` and `service logout`. Login asks the platform for a CLI login, prints the
 * approval URL and user code for the person to check in a browser, polls until approved,
 * and keeps the owner API token it receives in the credential store; the token is never
 * printed. Logout revokes that token on the platform, then removes it from the store.
 */
import { ApiError, type Client } from '../client.ts'
import type { CredentialStore } from '../credentials.ts'
import { CliError } from '../errors.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'

export interface PollOptions {
  /** Time between polls (SERVICE_POLL_INTERVAL_MS, default 2 s). */
  intervalMs: number
  /** When the CLI gives up waiting, whatever the platform says. */
  maxWaitMs: number
}

export function pollOptions(env: Record<string, string | undefined>, maxWaitMs: number): PollOptions {
  const interval = Number(env.SERVICE_POLL_INTERVAL_MS)
  return { intervalMs: Number.isFinite(interval) && interval > 0 ? interval : 2000, maxWaitMs }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Calls `poll` until it returns a value; transient failures (platform unreachable or 5xx)
 * are retried, and null comes back after `maxWaitMs`.
 */
export async function pollUntil<T>(options: PollOptions, poll: () => Promise<T | null>): Promise<T | null> {
  const deadline = Date.now() + options.maxWaitMs
  while (Date.now() < deadline) {
    await sleep(options.intervalMs)
    try {
      const outcome = await poll()
      if (outcome !== null) return outcome
    } catch (error) {
      if (!(error instanceof ApiError) || (error.status !== 0 && error.status < 500)) throw error
    }
  }
  return null
}

interface LoginStart { id: string; approveUrl: string; userCode: string; pollToken: string; expiresAt: string }
type LoginPoll = { status: 'pending' | 'collected' | 'expired' } | { status: 'approved'; token: string }

export async function loginCommand(
  io: Io,
  client: Client,
  options: { store: CredentialStore; poll: PollOptions },
): Promise<number> {
  // '' sends no Authorization header: starting a login needs no credentials.
  const login = await client.call<LoginStart>('POST', '/v1/cli/logins', {}, '')
  printResult(io, { approveUrl: login.approveUrl, userCode: login.userCode, expiresAt: login.expiresAt }, () => {
    io.out('To sign in, open this URL in your browser:')
    io.out('')
    io.out(`  ${login.approveUrl}`)
    io.out('')
    io.out(`and check that the page shows the code ${login.userCode}`)
    io.out('Waiting for your approval (the link works for 10 minutes)...')
  })
  const outcome = await pollUntil(options.poll, async () => {
    const answer = await client.call<LoginPoll>('POST', `/v1/cli/logins/${login.id}/poll`, { pollToken: login.pollToken }, '')
    return answer.status === 'pending' ? null : answer
  })
  if (!outcome || outcome.status === 'expired') {
    throw new CliError('LOGIN_EXPIRED', 'the sign-in was not approved in time', { next: 'service login' })
  }
  if (outcome.status !== 'approved') {
    throw new CliError('LOGIN_COLLECTED', 'this sign-in was already used', { next: 'service login' })
  }
  const { store } = options
  await store.set(client.baseUrl, outcome.token)
  if (store.fallback) {
    io.err(`warning: no OS credential store answered (${store.fallbackReason ?? 'none found'}); the token is kept in`
      + ` ${store.location}, a file only you can read (mode 0600)`)
  }
  const { user } = await client.call<{ user: { email: string } }>('GET', '/v1/me', undefined, outcome.token)
  printResult(io, {
    user: { email: user.email },
    store: { kind: store.kind, location: store.location, fallback: store.fallback },
  }, () => io.out(`signed in as ${user.email}`))
  return 0
}

export async function logoutCommand(io: Io, client: Client, options: { store: CredentialStore }): Promise<number> {
  const token = await options.store.get(client.baseUrl)
  if (io.env.SERVICE_TOKEN) io.err('note: SERVICE_TOKEN is set in the environment; logout neither revokes nor unsets it')
  if (!token) {
    printResult(io, { signedOut: false }, () => io.out(`not signed in at ${client.baseUrl}`))
    return 0
  }
  try {
    await client.call('DELETE', '/v1/me/token', undefined, token)
  } catch (error) {
    // Already revoked elsewhere: removing it locally is all that is left to do.
    if (!(error instanceof ApiError) || error.code !== 'UNAUTHENTICATED') throw error
  }
  await options.store.clear(client.baseUrl)
  printResult(io, { signedOut: true }, () => io.out(`signed out: the CLI's token is revoked and removed from ${options.store.location}`))
  return 0
}
