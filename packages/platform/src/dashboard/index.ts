/**
 * The owner dashboard (issue 19; spec 2.3, 5.2, 5.6, 6.3): server-rendered pages on
 * `{auth_url}/dashboard` for a signed-in person, over the same domain functions the owner API
 * routes call, with the person as the caller. `{base_url}/` redirects there. Nothing imports
 * this folder but the composition root.
 */
export { dashboardPages, dashboardRedirects } from './routes.ts'
export type { DashboardDeps } from './context.ts'
