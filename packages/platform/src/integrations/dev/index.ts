/**
 * Development mode for integrations (spec 4.5, 6.1, 7.2): fake or live answers to a
 * consumer's calls, test connections for a provider's own Functions, injected events. Its
 * owner API routes, and what the broker and development invocations ask of it.
 */
export { DEFAULT_DEV_MODE, devModeOf, type DevMode } from './mode.ts'
export { devProviderRun, integrationRoleOf, listDevSettings, setDevMode, setDevTestConnection } from './dev-mode.ts'
export type { DevIntegrationSetting, DevProviderRunDeps } from './dev-mode.ts'
export { injectDevEvent, UNBOUND_BINDING_ID } from './inject.ts'
export { devIntegrationRoutes } from './routes.ts'
