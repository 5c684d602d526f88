/**
 * `{base_url}/mcp`: the MCP server over Streamable HTTP, stateless. Each POST builds a server
 * for its caller, answers the JSON-RPC messages it carries as JSON, and ends; no session id,
 * no server-held stream, so any platform process answers any request (GET and DELETE, the
 * session transport's stream and end, answer 405 to everyone). A request without credentials may only
 * initialize and call the onboarding tools; anything else, and any token that is
 * not valid, answers 401 with `WWW-Authenticate: Bearer resource_metadata="…"` naming the
 * protected resource metadata (RFC 9728), where OAuth clients start. (A caller without
 * credentials may initialize and call the onboarding tools by name; listing tools needs one.)
 */
import { Hono } from 'hono'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { clientAddress } from '../http/client-address.ts'
import { BUNDLE_LIMITS } from '../deploy/bundle-files.ts'
import { createMcpServer } from './server.ts'
import { resolvePrincipal } from './principal.ts'
import { ANONYMOUS_TOOLS } from './tools.ts'
import type { McpDeps } from './tool.ts'

/** A deploy's files travel as JSON text: room for a full bundle, escaped. */
export const MAX_MCP_BODY_BYTES = Math.ceil(BUNDLE_LIMITS.maxTotalBytes * 1.5)

/**
 * Methods a caller without credentials may send: initialize and ping, and tools/call of the
 * onboarding tools. Not tools/list: clients list tools right after initializing, and its 401
 * is what starts their OAuth flow (decisions.md, "Who may call without a credential").
 */
const ANONYMOUS_METHODS: ReadonlySet<string> = new Set(['initialize', 'ping'])

/** Where the protected resource metadata of `{base_url}/mcp` is (RFC 9728, section 3.1). */
export function resourceMetadataUrl(base: string): string {
  return `${base}/.well-known/oauth-protected-resource/mcp`
}

function jsonRpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status, headers: { 'content-type': 'application/json', ...headers },
  })
}

function unauthorized(base: string, invalid: boolean): Response {
  const challenge = `Bearer resource_metadata="${resourceMetadataUrl(base)}"` +
    (invalid ? ', error="invalid_token", error_description="the access token is unknown, expired or revoked"' : '')
  return jsonRpcError(401, -32001, invalid
    ? 'the access token is unknown, expired or revoked'
    : 'authentication required: connect with OAuth (see WWW-Authenticate) or send an owner API token as Authorization: Bearer svc_owner_…',
  { 'www-authenticate': challenge })
}

/** Whether every message of a request is one an anonymous caller may send. */
function anonymousMayAsk(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body]
  return messages.length > 0 && messages.every((message) => {
    if (typeof message !== 'object' || message === null) return false
    const { method, params } = message as { method?: unknown; params?: { name?: unknown } }
    if (typeof method !== 'string') return true // a response to the server: nothing it may not see
    if (ANONYMOUS_METHODS.has(method) || method.startsWith('notifications/')) return true
    return method === 'tools/call' && typeof params?.name === 'string' && ANONYMOUS_TOOLS.has(params.name)
  })
}

export function mcpRoutes(deps: McpDeps & { trustProxy: boolean }) {
  const routes = new Hono()

  routes.post('/', async (c) => {
    const declared = Number(c.req.header('content-length') ?? '0')
    if (declared > MAX_MCP_BODY_BYTES) return jsonRpcError(413, -32600, `the request body may be at most ${MAX_MCP_BODY_BYTES} bytes`)
    const principal = await resolvePrincipal(deps, c.req.header('authorization'))
    if (principal === null) return unauthorized(deps.urls.base, true)
    const text = await c.req.text()
    if (Buffer.byteLength(text) > MAX_MCP_BODY_BYTES) return jsonRpcError(413, -32600, `the request body may be at most ${MAX_MCP_BODY_BYTES} bytes`)
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      return jsonRpcError(400, -32700, 'Parse error: the body must be JSON-RPC')
    }
    if (principal.kind === 'anonymous' && !anonymousMayAsk(body)) return unauthorized(deps.urls.base, false)

    const server = createMcpServer({ deps, principal, clientAddress: clientAddress(c, deps.trustProxy) })
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true })
    try {
      await server.connect(transport)
      return await transport.handleRequest(c.req.raw, { parsedBody: body })
    } finally {
      await server.close()
    }
  })

  // No stream to open or session to end, for anyone: a 401 here would start a second OAuth
  // flow in clients that probe the stream while their first one runs (decisions.md).
  const noStream = () => jsonRpcError(405, -32000, 'this MCP server is stateless: send requests with POST', { allow: 'POST' })
  routes.get('/', noStream)
  routes.delete('/', noStream)
  return routes
}

/**
 * The protected resource metadata of `{base_url}/mcp` (RFC 9728), at its path-suffixed
 * well-known URI and at the bare one: the authorization server is the platform itself. No
 * `scopes_supported`, so a client asks for the scope it means: `mcp` (the whole account, the
 * default) or `mcp:app:<slug>` (one app).
 */
export function mcpResourceMetadataRoutes(deps: { urls: { base: string } }) {
  const routes = new Hono()
  const metadata = {
    resource: `${deps.urls.base}/mcp`,
    authorization_servers: [deps.urls.base],
    bearer_methods_supported: ['header'],
    resource_name: 'Service platform MCP server',
  }
  const cors = { 'access-control-allow-origin': '*' }
  for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
    routes.get(path, (c) => c.json(metadata, 200, cors))
    routes.options(path, (c) => c.body(null, 204, { ...cors, 'access-control-allow-methods': 'GET, OPTIONS', 'access-control-allow-headers': 'mcp-protocol-version' }))
  }
  return routes
}
