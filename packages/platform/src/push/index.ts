/**
 * Web push (spec 2.10 `notifications`): the feature's public surface. `createPush` builds
 * it (push.ts); the Functions host answers `ctx.notifications` with `Push.answer`, the edge
 * serves `Push.routes` under /_service/push, main.ts starts `Push.worker`.
 */
export { createPush, type Push, type PushDeps, type PushOptions } from './push.ts'
export type { NotificationsContextCall, NotificationPayload } from './send.ts'
export { MAX_PAYLOAD_BYTES } from './send.ts'
export type { PushRequestTarget } from './routes.ts'
export type { PushWorkerOptions } from './delivery-worker.ts'
