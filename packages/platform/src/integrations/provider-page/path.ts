/**
 * Where a provider app's integration page is on `{auth_url}` (pages.ts), in a file of its own
 * so the connection pages can link to it without importing the page's dependencies.
 */

/**
 * The integration page of the provider app `app` (slug or id), a path on `{auth_url}`.
 *
 * @example
 *   integrationPagePath('orders') // '/apps/orders/integration'
 */
export function integrationPagePath(app: string): string {
  return `/apps/${encodeURIComponent(app)}/integration`
}
