/**
 * App secrets: the encrypted store, the owner API, redaction of values from what leaves a
 * Function, and the deploy warning for required secrets without a value.
 */
export {
  checkSecretName, checkSecretValue, createSecretStore, MAX_SECRET_BYTES_PER_NAMESPACE, MAX_SECRET_VALUE_BYTES, MAX_SECRETS_PER_NAMESPACE,
  SECRET_CHANGED, SECRET_NAME_PATTERN,
  type SecretStore, type StoredSecret,
} from './secrets.ts'
export type { SecretScope } from './scope.ts'
export { createRedactor, REDACTED, type Redactor } from './redact.ts'
export { secretRoutes } from './routes.ts'
export { listAppSecrets, setAppSecret, unsetAppSecret, type SecretView } from './app-secrets.ts'
export { missingSecretWarnings } from './deploy-warnings.ts'
