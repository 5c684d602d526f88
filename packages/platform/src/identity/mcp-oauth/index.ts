/**
 * MCP OAuth 2.1 (issue 18): the platform as the authorization server of its MCP server. The
 * composition root mounts `mcpOAuthRoutes` on `{base_url}` and `mcpConsentPages` on
 * `{auth_url}`; the MCP server verifies access tokens with `verifyMcpAccessToken`.
 */
export { mcpOAuthRoutes, authorizationServerMetadata } from './routes.ts'
export { mcpConsentPages } from './pages.ts'
export { MCP_ACCESS_TOKEN_PREFIX, MCP_OAUTH_LIFETIMES, MCP_REFRESH_TOKEN_PREFIX, verifyMcpAccessToken } from './mcp-oauth.ts'
