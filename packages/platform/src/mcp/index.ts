/**
 * The MCP server for coding agents (spec 4.5; issue 18): `{base_url}/mcp` over Streamable
 * HTTP with the official SDK, every tool calling the function its owner API route calls.
 * Callers: owner API tokens, MCP OAuth access tokens (identity's mcp-oauth flow), or nobody
 * for onboarding; `mcpResourceMetadataRoutes` tells OAuth clients where to get a token.
 */
export { mcpResourceMetadataRoutes, mcpRoutes, MAX_MCP_BODY_BYTES, resourceMetadataUrl } from './routes.ts'
export type { McpDeps, McpMailer } from './tool.ts'
export type { McpScope, Principal } from './principal.ts'
export { TOOLS } from './tools.ts'
