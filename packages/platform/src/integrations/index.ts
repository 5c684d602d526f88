/**
 * Organisation integrations. Today: published contracts (spec 2.6): publishing inside a
 * deploy's transaction, what the manifest validator checks slots and names against, and the
 * owner API that lists them.
 */
export { contractView, listContracts, publishContract, publishedIntegrationsFor, type PublishingApp } from './contracts.ts'
export { customIntegrationRoutes } from './routes.ts'
export { listCustomIntegrations } from './custom-integrations.ts'
