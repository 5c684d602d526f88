/**
 * Inbound webhooks (spec 6.2): the route at a connection's secret URL and the receiver
 * that forwards each POST to the provider app's webhook Function.
 */
export { WEBHOOK_PATH_PREFIX, webhookRoutes } from './routes.ts'
export { WEBHOOK_TIMEOUT_MS, createWebhookReceiver, type WebhookDeps, type WebhookInput, type WebhookReceiver } from './webhooks.ts'
export { MAX_WEBHOOK_BODY_BYTES } from './body.ts'
export { STRIPPED_HEADERS, STRIPPED_PREFIXES, type WebhookHeader } from './headers.ts'
