/** Messages between the benchmark (parent) and the platform server it starts (child, over IPC). */

export type Storage = 'postgres' | 'pglite'

export type ToServer =
  | {
      type: 'start'; storage: Storage; databaseUrl?: string; rows: number; categories: number; extraApps?: { count: number; rows: number }
      /** DATABASE_APP_POOL_SIZE (connections per namespace login pool); the platform's default when absent. */
      appPoolSize?: number
    }
  /** Starts (on) or stops and reports (off) counting SQL statements and server time per request. */
  | { type: 'profile'; on: boolean }
  | { type: 'stop' }

export interface Fixture {
  port: number
  /** The Host header of the app's origin, e.g. `bench.localhost:41234`. */
  host: string
  appId: string
  ownerId: string
  ownerEmail: string
  /** An app access token (`svc_app_…`) acting as the owner. */
  appToken: string
  /** A signed-in person's bearer access token (a user the owner granted access). */
  userJwt: string
  /** The same person's app session cookie, as the `Cookie` header a browser sends. */
  userCookie: string
  /** The app namespace's schema, e.g. `app_bench`. */
  schemaName: string
  rows: number
  seedSeconds: number
  /** More apps like `bench` (growth.ts): each one's Host header and app token. */
  extraApps: { host: string; appToken: string }[]
  /** The key the server's namespace logins derive their passwords from (base64), so the bench's own login pool logs in with the same ones. */
  loginKey: string
}

export interface StatementStats {
  /** The statement's first 110 characters, whitespace collapsed. */
  sql: string
  count: number
  ms: number
}

export interface Profile {
  requests: number
  /** Sum over requests of the time from the platform's fetch() being called to its Response. */
  serverMs: number
  statements: StatementStats[]
}

export type FromServer =
  | { type: 'ready'; fixture: Fixture }
  | { type: 'profile'; profile: Profile | null }
  | { type: 'failed'; message: string }
