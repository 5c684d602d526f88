/**
 * Identity: the public surface other features and the composition root use. Inside, one
 * folder per flow: `sign-in/` (email link, password, confirmation), `sessions/` (browser and
 * app sessions, access tokens, refresh), `app-tokens/`, `companies/` (companies, onboarding,
 * organisation), `cli-login/`, `mcp-oauth/` (the MCP server's OAuth 2.1 authorization server
 * and its approval page), `access/` (app roles, integration audiences), `accounts/`
 * (users, owner tokens, the operator), and `pages/` (what every page flow on `{auth_url}`
 * shares).
 */
export { accessReason } from './access/grants.ts'
export { grantRoutes } from './access/routes.ts'
export { appForRole, effectiveRole, holdsRole, impliedRoles, roleFrom } from './access/roles.ts'
export type { AppRole } from './access/roles.ts'
export { mayAdministerIntegration, mayChangeIntegrationAudience, mayUseIntegration, readIntegrationAudience, setIntegrationAudience, usesIntegration } from './access/integration-audience.ts'
export type { AudienceFacts } from './access/integration-audience.ts'
export type { IntegrationAudience } from './access/integration-audience.ts'
export { isOrganisationAdmin } from './access/organisation-admin.ts'
export { ensureOperatorKey } from './accounts/operator-key.ts'
export { bearerToken, requireOwner } from './accounts/owner-auth.ts'
export { OWNER_TOKEN_PREFIX, verifyOwnerToken } from './accounts/owner-tokens.ts'
export type { OwnerEnv } from './accounts/owner-auth.ts'
export { meRoutes, operatorRoutes } from './accounts/routes.ts'
export { createUser, ensureOrganisation, findUserByEmail, findUserById } from './accounts/users.ts'
export type { User } from './accounts/users.ts'
export { APP_TOKEN_PREFIX, appTokenGate, createAppToken, verifyAppToken } from './app-tokens/app-tokens.ts'
export type { DataGate, VerifiedAppToken } from './app-tokens/app-tokens.ts'
export { appTokenPages } from './app-tokens/pages.ts'
export { appTokenRequestRoutes, appTokenRoutes } from './app-tokens/routes.ts'
export { createOwnerAppToken, requestAppToken } from './app-tokens/issue.ts'
export { browserSecret } from './browser-secrets.ts'
export { cliLoginPages, cliLoginRoutes, meTokenRoutes } from './cli-login/routes.ts'
export { onboardingRoutes } from './companies/onboarding-routes.ts'
export { ONBOARDING_CLIENT_LIMIT, pollOnboardingRequest, startOnboarding } from './companies/onboarding-start.ts'
export { organisationRoutes } from './companies/organisation-routes.ts'
export { LIFETIMES } from './lifetimes.ts'
export { authorizationServerMetadata, mcpConsentPages, mcpOAuthRoutes, MCP_OAUTH_LIFETIMES, verifyMcpAccessToken } from './mcp-oauth/index.ts'
export { browserSession, confirmedPerson, confirmFirstPage, pageErrorHandler, signInFirst } from './pages/auth-pages.ts'
export { clearCookie, readCookie, writeCookie } from './pages/cookies.ts'
export { csrfToken, readForm } from './pages/forms.ts'
export type { CookieOptions } from './pages/cookies.ts'
export { createAccessTokenVerifier, mintAccessToken } from './sessions/access-tokens.ts'
export { appSessionById, appSessionGate, exchangeCode, resolveAppSession, signOutAppSession } from './sessions/app-sessions.ts'
export type { AppSessionDeps } from './sessions/app-sessions.ts'
export { confirmEmail, enforceConfirmationDeadlines, VERIFICATION_REQUIRED } from './sign-in/confirmation.ts'
export { authRoutes } from './sign-in/routes.ts'
