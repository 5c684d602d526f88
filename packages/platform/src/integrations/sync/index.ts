/**
 * Integration sync: the public surface for the composition root (the scheduler every
 * platform process runs) and the connection pages (a connection's last sync).
 */
export { createSyncScheduler, type SyncScheduler, type SyncSchedulerDeps, type SyncSchedulerOptions, type SyncTick } from './scheduler.ts'
export { SYNC_TIMEOUT_MS } from './run.ts'
export { syncStatus, type SyncStatus } from './status.ts'
