/**
 * Connections: the public surface for the composition root and, later, the broker and the
 * webhook receiver. Pages on `{auth_url}` create connections and replace their credentials;
 * the owner API lists and removes them; the broker reads credentials and marks a connection
 * Reconnect required. Values leave only through `readConnectionCredentials`.
 */
export {
  connectionKeyring, findConnection, findConnectionByWebhookToken, findPublishedIntegration, managesConnection,
  markReconnectRequired, readConnectionCredentials, resealConnections, seesConnection,
} from './connections.ts'
export type { Connection, ConnectionCredentials, ConnectionKeyring, ConnectionKind, ConnectionStatus, PublishedIntegration } from './connections.ts'
export { connectPagePath, connectionPages, webhookUrl } from './pages.ts'
export { connectionRoutes } from './routes.ts'
