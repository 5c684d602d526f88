/**
 * `service app access-token list|create|revoke|request`: an app's access tokens
 * (`svc_app_…`), which act as the app's owner on its runtime APIs. The CLI never prints a
 * token's value: `create` prints a one-time reveal link for the owner's browser, and
 * `request` (for an agent without owner credentials) prints an approval link and waits for
 * the owner, who sees the value on the approval page.
 */
import type { Client } from '../client.ts'
import { CliError } from '../errors.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'
import { pollUntil, type PollOptions } from './login.ts'

interface TokenView { id: string; name: string; createdAt: string; lastUsedAt: string | null }

const path = (app: string) => `/v1/apps/${encodeURIComponent(app)}/access-tokens`

export async function accessTokenListCommand(io: Io, client: Client, app: string): Promise<number> {
  const { tokens } = await client.call<{ tokens: TokenView[] }>('GET', path(app))
  printResult(io, { tokens }, () => {
    if (tokens.length === 0) io.out(`no access tokens for ${app}; create one with: service app access-token create ${app}`)
    for (const t of tokens) {
      io.out(`${t.id}  ${t.name.padEnd(24)} created ${t.createdAt}  last used ${t.lastUsedAt ?? 'never'}`)
    }
  })
  return 0
}

export async function accessTokenCreateCommand(io: Io, client: Client, app: string, name: string | undefined): Promise<number> {
  const created = await client.call<{ token: TokenView; revealUrl: string }>('POST', path(app), name === undefined ? {} : { name })
  printResult(io, { token: created.token, revealUrl: created.revealUrl }, () => {
    io.out(`created access token ${created.token.id} (${created.token.name}) for ${app}`)
    io.out('open this link, signed in as the app\'s owner, to see the token; it works once, for 15 minutes:')
    io.out(created.revealUrl)
  })
  return 0
}

export async function accessTokenRevokeCommand(io: Io, client: Client, app: string, tokenId: string): Promise<number> {
  await client.call('DELETE', `${path(app)}/${encodeURIComponent(tokenId)}`)
  printResult(io, { revoked: tokenId }, () => io.out(`revoked access token ${tokenId} of ${app}; it stops working on the next request`))
  return 0
}

interface RequestStart { id: string; approveUrl: string; pollToken: string; expiresAt: string }
interface RequestPoll { status: 'pending' | 'approved' | 'expired'; tokenId?: string }

export async function accessTokenRequestCommand(
  io: Io,
  client: Client,
  options: { app: string; name: string | undefined; poll: PollOptions },
): Promise<number> {
  // '' sends no Authorization header: the agent asking has no owner credentials.
  const request = await client.call<RequestStart>('POST', '/v1/app-token-requests',
    { app: options.app, ...(options.name === undefined ? {} : { name: options.name }) }, '')
  printResult(io, { approveUrl: request.approveUrl, expiresAt: request.expiresAt }, () => {
    io.out(`ask the owner of ${options.app} to open this link and approve (it works for 15 minutes):`)
    io.out(request.approveUrl)
    io.out('waiting for approval...')
  })
  const outcome = await pollUntil(options.poll, async () => {
    const answer = await client.call<RequestPoll>('POST', `/v1/app-token-requests/${request.id}/poll`, { pollToken: request.pollToken }, '')
    return answer.status === 'pending' ? null : answer
  })
  if (!outcome || outcome.status !== 'approved') {
    throw new CliError('REQUEST_EXPIRED', 'the request was not approved in time', { next: `service app access-token request ${options.app}` })
  }
  printResult(io, { status: 'approved', tokenId: outcome.tokenId }, () => {
    io.out(`approved: access token ${outcome.tokenId} created for ${options.app}`)
    io.out('the owner saw its value once on the approval page; keep it in your secret manager, never on a command line')
  })
  return 0
}
