/**
 * Web push notifications (spec 2.10 `notifications`, issue 17): the feature built from its
 * parts. `createPush` gives the routes of the browser SDK's `service.notifications`
 * (routes.ts), the answer to `ctx.notifications.send` (send.ts) and the delivery worker
 * (delivery-worker.ts), over the platform's VAPID key pair (vapid-keys.ts).
 */
import type { PushSettings } from '../config.ts'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import { createPushWorker, type PushWorker, type PushWorkerOptions } from './delivery-worker.ts'
import { pushRoutes, type PushRequestTarget } from './routes.ts'
import { createNotificationsContext, type NotificationsContextCall } from './send.ts'
import { DEFAULT_MAX_SUBSCRIPTIONS_PER_USER } from './subscriptions.ts'
import { createVapidKeyStore } from './vapid-keys.ts'

/** Test and tuning options: the worker's, and the bound on pending deliveries per namespace. */
export interface PushOptions extends PushWorkerOptions {
  readonly maxPending?: number
  readonly allowLoopbackHttp?: boolean
}

export interface PushDeps {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  /** The key the VAPID private key is sealed under (derived from the master key). */
  readonly sealKey: Uint8Array
  /** PUSH_* (config.ts). */
  readonly settings: PushSettings
  /** `{app_url}` of an app slug. */
  readonly appOrigin: (slug: string) => string
  readonly options?: PushOptions
}

export interface Push {
  /** `/_service/push/*` on an app origin (the edge mounts it). */
  readonly routes: (request: Request, target: PushRequestTarget) => Promise<Response>
  /** Answers `ctx.notifications` (the Functions host calls it). */
  answer(call: NotificationsContextCall): Promise<unknown>
  /** The delivery worker: `start()` (main.ts), `runDue()` (tests), `stop()`. */
  readonly worker: PushWorker
  /** The VAPID public key (made on first use). */
  publicKey(): Promise<string>
}

/**
 * @example
 * const push = createPush({ db, clock, logger, sealKey: deriveKey(masterKey, 'push-vapid'), settings, appOrigin: (slug) => urls.app(slug) })
 * await push.worker.start()
 */
export function createPush(deps: PushDeps): Push {
  const { db, clock, logger } = deps
  const vapid = createVapidKeyStore({ db, clock, key: deps.sealKey })
  const policy = { allowLoopbackHttp: deps.options?.allowLoopbackHttp ?? deps.settings.allowLoopbackHttp }
  const send = createNotificationsContext({
    db, clock, appOrigin: deps.appOrigin, ...(deps.options?.maxPending === undefined ? {} : { maxPending: deps.options.maxPending }),
  })
  return {
    routes: pushRoutes({ db, clock, vapid, policy, maxSubscriptionsPerUser: deps.settings.maxSubscriptionsPerUser || DEFAULT_MAX_SUBSCRIPTIONS_PER_USER }),
    answer: send,
    worker: createPushWorker({ db, clock, logger, vapid, subject: deps.settings.subject, policy, ...deps.options }),
    publicKey: async () => (await vapid.keys()).publicKey,
  }
}
