/**
 * Connections: the public surface for the composition root and, later, the broker and the
 * webhook receiver. Pages on `{auth_url}` create connections and replace their credentials;
 * the owner API lists and removes them; the broker reads credentials and marks a connection
 * Reconnect required. Values leave only through `readConnectionCredentials`.
 */
export {
  checkCredentialValues, checkLabel, connectableKinds, connectionKeyring, createConnection, findConnection, findConnectionByWebhookToken, findPublishedIntegration, listConnections, managesConnection,
  managedConnection, markReconnectRequired, openCredentials, readConnectionCredentials, replaceCredentials, resealConnections, seesConnection,
  toConnection,
} from './connections.ts'
export type { ConnectionRow, CredentialRow } from './queries.ts'
export type { Actor, Connection, ConnectionCredentials, ConnectionDeps, ConnectionKeyring, ConnectionKind, ConnectionStatus, PublishedIntegration } from './connections.ts'
export { connectPagePath, connectionPageUrl, connectionPages, webhookUrl } from './pages.ts'
export { connectionRoutes } from './routes.ts'
