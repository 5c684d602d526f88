/** SQL of MCP OAuth (migration 0036): one function per statement. */
import { first, type Queryable } from '../../db/db.ts'

export interface ClientRow extends Record<string, unknown> {
  id: string
  client_name: string
  redirect_uris: string[]
  created_at: Date
}

export async function insertClient(db: Queryable, input: { name: string; redirectUris: string[]; now: Date }): Promise<ClientRow> {
  const [row] = await db.query<ClientRow>(
    'insert into platform.mcp_oauth_clients (client_name, redirect_uris, created_at) values ($1, $2, $3) returning id, client_name, redirect_uris, created_at',
    [input.name, input.redirectUris, input.now])
  return row!
}

export async function selectClient(db: Queryable, id: string): Promise<ClientRow | undefined> {
  return first<ClientRow>(db, 'select id, client_name, redirect_uris, created_at from platform.mcp_oauth_clients where id = $1', [id])
}

export async function insertCode(db: Queryable, input: {
  codeHash: Uint8Array; clientId: string; userId: string; appId: string | null; scope: string; redirectUri: string; codeChallenge: string; now: Date; expiresAt: Date
}): Promise<void> {
  await db.query(
    `insert into platform.mcp_oauth_codes (code_hash, client_id, user_id, app_id, scope, redirect_uri, code_challenge, created_at, expires_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [input.codeHash, input.clientId, input.userId, input.appId, input.scope, input.redirectUri, input.codeChallenge, input.now, input.expiresAt])
}

export interface CodeRow extends Record<string, unknown> {
  client_id: string
  user_id: string
  app_id: string | null
  scope: string
  redirect_uri: string
  code_challenge: string
  expires_at: Date
  used_at: Date | null
  grant_id: string | null
}

/** The code, locked for its exchange. */
export async function selectCodeForUpdate(db: Queryable, codeHash: Uint8Array): Promise<CodeRow | undefined> {
  return first<CodeRow>(db,
    `select client_id, user_id, app_id, scope, redirect_uri, code_challenge, expires_at, used_at, grant_id
       from platform.mcp_oauth_codes where code_hash = $1 for update`, [codeHash])
}

export async function markCodeUsed(db: Queryable, input: { codeHash: Uint8Array; grantId: string | null; now: Date }): Promise<void> {
  await db.query('update platform.mcp_oauth_codes set used_at = $2, grant_id = $3 where code_hash = $1', [input.codeHash, input.now, input.grantId])
}

export async function deleteExpiredCodes(db: Queryable, before: Date): Promise<void> {
  await db.query('delete from platform.mcp_oauth_codes where expires_at < $1', [before])
}

export async function insertGrant(db: Queryable, input: { clientId: string; userId: string; appId: string | null; scope: string; now: Date }): Promise<string> {
  const [row] = await db.query<{ id: string }>(
    'insert into platform.mcp_oauth_grants (client_id, user_id, app_id, scope, created_at) values ($1, $2, $3, $4, $5) returning id',
    [input.clientId, input.userId, input.appId, input.scope, input.now])
  return row!.id
}

export async function revokeGrant(db: Queryable, input: { grantId: string; now: Date }): Promise<void> {
  await db.query('update platform.mcp_oauth_grants set revoked_at = coalesce(revoked_at, $2) where id = $1', [input.grantId, input.now])
}

export async function insertToken(db: Queryable, input: { tokenHash: Uint8Array; grantId: string; kind: 'access' | 'refresh'; now: Date; expiresAt: Date }): Promise<void> {
  await db.query(
    'insert into platform.mcp_oauth_tokens (token_hash, grant_id, kind, created_at, expires_at) values ($1, $2, $3, $4, $5)',
    [input.tokenHash, input.grantId, input.kind, input.now, input.expiresAt])
}

export interface TokenRow extends Record<string, unknown> {
  grant_id: string
  kind: 'access' | 'refresh'
  expires_at: Date
  used_at: Date | null
  client_id: string
  user_id: string
  app_id: string | null
  scope: string
  revoked_at: Date | null
}

/** A token with its grant; `lock` for a refresh token's rotation. */
export async function selectToken(db: Queryable, tokenHash: Uint8Array, options: { lock?: boolean } = {}): Promise<TokenRow | undefined> {
  return first<TokenRow>(db,
    `select t.grant_id, t.kind, t.expires_at, t.used_at, g.client_id, g.user_id, g.app_id, g.scope, g.revoked_at
       from platform.mcp_oauth_tokens t join platform.mcp_oauth_grants g on g.id = t.grant_id
      where t.token_hash = $1${options.lock ? ' for update of t' : ''}`, [tokenHash])
}

export async function markTokenUsed(db: Queryable, input: { tokenHash: Uint8Array; now: Date }): Promise<void> {
  await db.query('update platform.mcp_oauth_tokens set used_at = $2 where token_hash = $1', [input.tokenHash, input.now])
}

export async function deleteExpiredTokens(db: Queryable, before: Date): Promise<void> {
  await db.query('delete from platform.mcp_oauth_tokens where expires_at < $1', [before])
}

export interface ApprovalRow extends Record<string, unknown> {
  id: string
  client_name: string
  app_slug: string | null
  scope: string
  created_at: Date
  last_issued_at: Date
}

/** A person's approvals that are not revoked and still hold an unexpired token, newest first. */
export async function selectApprovals(db: Queryable, input: { userId: string; now: Date }): Promise<ApprovalRow[]> {
  return db.query<ApprovalRow>(
    `select g.id, c.client_name, a.slug as app_slug, g.scope, g.created_at, max(t.created_at) as last_issued_at
       from platform.mcp_oauth_grants g
       join platform.mcp_oauth_clients c on c.id = g.client_id
       join platform.mcp_oauth_tokens t on t.grant_id = g.id
       left join platform.apps a on a.id = g.app_id
      where g.user_id = $1 and g.revoked_at is null
      group by g.id, c.client_name, a.slug
     having max(t.expires_at) > $2
      order by g.created_at desc, g.id`, [input.userId, input.now])
}

/** Revokes the person's own approval; false when it is not theirs or already revoked. */
export async function revokeOwnGrant(db: Queryable, input: { grantId: string; userId: string; now: Date }): Promise<boolean> {
  const rows = await db.query<{ id: string }>(
    'update platform.mcp_oauth_grants set revoked_at = $3 where id = $1 and user_id = $2 and revoked_at is null returning id',
    [input.grantId, input.userId, input.now])
  return rows.length === 1
}
