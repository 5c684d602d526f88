/**
 * Realtime (issue 20): the feature's public surface. `createRealtime` builds it
 * (realtime.ts); the edge answers `{app_url}/_service/realtime` with `Realtime.handle` after
 * admission, main.ts hands the HTTP server's `upgrade` events to `Realtime.upgrade` and
 * starts it.
 */
export { createRealtime, DEFAULT_REALTIME_SETTINGS, type Realtime, type RealtimeDeps, type RealtimeSettings, type RealtimeTarget } from './realtime.ts'
export { CLOSE as REALTIME_CLOSE_CODES } from './protocol.ts'
export { REALTIME_PATH } from './node-upgrade.ts'
