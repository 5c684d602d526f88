/**
 * A socket's authority after its handshake. The handshake's credentials (the app session
 * cookie, the bearer token, the Host and Origin) are replayed through the app edge's
 * admission, as a new handshake would be: every REALTIME_REVALIDATE_SECONDS, at once when an
 * app changes (APP_CHANGED: visibility, status, owner, access tokens), and when a bearer
 * access token expires. A socket whose credentials no longer admit the same person is
 * closed with 4000 + the status the handshake would now get (4401 the session or token has
 * ended, 4403 no access any more, 4404 the app is gone, 4503 the app is paused); a failure
 * of the platform itself (the sign-in service unavailable) keeps it until the next check.
 */
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import type { Admission, Connection, Credential } from './connection.ts'
import { CLOSE } from './protocol.ts'

/** What a replayed handshake answered: admitted as someone, or refused with a status and code. */
export type CheckOutcome = { admitted: Admission } | { status: number; code: string | null }

export interface AuthorityDeps {
  clock: Clock
  logger: Logger
  /** Replays a handshake's credentials through the edge (no request log line). */
  check(credential: Credential): Promise<CheckOutcome>
  connections(): Iterable<Connection>
  /** Every socket is re-checked this often; 0: only when asked. */
  intervalMs: number
}

export interface Authority {
  /** Starts the periodic re-check. */
  start(): void
  stop(): void
  /** Re-checks every socket now (sockets with the same credentials share one check). */
  recheckAll(): Promise<void>
  /** Re-checks the sockets of one app soon (debounced), after a change notice. */
  appChanged(): void
  /** Watches a new socket: closes it when its bearer token expires (re-checked then). */
  watch(connection: Connection): void
}

/** The close code for a replayed handshake's refusal; null: keep the socket (a passing failure). */
export function closeCodeFor(outcome: Exclude<CheckOutcome, { admitted: Admission }>): number | null {
  switch (outcome.status) {
    case 401:
      return CLOSE.authRequired
    case 403:
      return CLOSE.accessDenied
    case 404:
      return CLOSE.appNotFound
    case 503:
      return outcome.code === 'APP_NOT_ACTIVE' ? CLOSE.appNotActive : null
    default:
      return null
  }
}

const REASONS: Record<number, string> = {
  [CLOSE.authRequired]: 'the session or token this socket was opened with has ended',
  [CLOSE.accessDenied]: 'no access to this app any more',
  [CLOSE.appNotFound]: 'the app is gone',
  [CLOSE.appNotActive]: 'the app is not active',
}

/** Checks run at once at most. */
const CONCURRENCY = 4
/** The largest delay a timer takes (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1

export function createAuthority(deps: AuthorityDeps): Authority {
  let timer: ReturnType<typeof setInterval> | null = null
  let debounce: ReturnType<typeof setTimeout> | null = null
  let running: Promise<void> | null = null
  let again = false

  /** Applies one outcome to the sockets that share the credential. */
  function apply(outcome: CheckOutcome, sockets: readonly Connection[]): void {
    for (const connection of sockets) {
      if (connection.closed) continue
      if ('admitted' in outcome) {
        // Admitted, but as someone else (a public app reads an ended session as anonymous).
        if ((outcome.admitted.user?.id ?? null) !== (connection.admission.user?.id ?? null)) {
          connection.close(CLOSE.authRequired, REASONS[CLOSE.authRequired]!)
        }
        continue
      }
      const code = closeCodeFor(outcome)
      if (code !== null) connection.close(code, REASONS[code]!)
      else deps.logger.warn('realtime authority check failed; the socket is kept until the next check', { status: outcome.status, code: outcome.code })
    }
  }

  async function checkGroup(sockets: readonly Connection[]): Promise<void> {
    try {
      apply(await deps.check(sockets[0]!.credential), sockets)
    } catch (error) {
      deps.logger.warn('realtime authority check failed; the socket is kept until the next check', { error: String(error) })
    }
  }

  async function run(): Promise<void> {
    const groups = new Map<string, Connection[]>()
    for (const connection of deps.connections()) {
      if (connection.closed) continue
      const key = JSON.stringify([connection.credential.url, connection.credential.headers])
      const group = groups.get(key)
      if (group) group.push(connection)
      else groups.set(key, [connection])
    }
    const all = [...groups.values()]
    let next = 0
    const worker = async () => {
      while (next < all.length) await checkGroup(all[next++]!)
    }
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, all.length) }, worker))
  }

  const api: Authority = {
    start() {
      if (timer || deps.intervalMs <= 0) return
      timer = setInterval(() => void api.recheckAll(), deps.intervalMs)
      timer.unref()
    },
    stop() {
      if (timer) clearInterval(timer)
      if (debounce) clearTimeout(debounce)
      timer = null
      debounce = null
    },
    recheckAll() {
      if (running) {
        again = true
        return running
      }
      running = (async () => {
        do {
          again = false
          await run()
        } while (again)
      })().finally(() => {
        running = null
      })
      return running
    },
    appChanged() {
      if (debounce) return
      debounce = setTimeout(() => {
        debounce = null
        void api.recheckAll()
      }, 250)
      debounce.unref()
    },
    watch(connection) {
      const { expiresAt } = connection.credential
      if (expiresAt === null) return
      // A little past the expiry, so the edge's own check (by the same clock) refuses it.
      const delay = Math.min(MAX_TIMER_MS, Math.max(0, expiresAt - deps.clock.now().getTime() + 500))
      const expiry = setTimeout(() => void checkGroup([connection]), delay)
      expiry.unref()
      connection.onClosed(() => clearTimeout(expiry))
    },
  }
  return api
}
