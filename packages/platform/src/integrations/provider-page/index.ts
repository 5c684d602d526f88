/**
 * The provider app's integration page on `{auth_url}` (pages.ts): the contract, the OAuth
 * redirect URI its administrators register, its audiences and the connections to it.
 *
 * @example
 * auth.route('/', providerPages({ db, clock, logger, urls, cookies }))
 */
export { providerPages, type ProviderPageDeps } from './pages.ts'
export { integrationPagePath } from './path.ts'
