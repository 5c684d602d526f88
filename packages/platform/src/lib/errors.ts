/**
 * The platform's one error class and its code catalog. Every failure a caller can act on
 * is a `ServiceError` with a stable string code (the specification's codes spelled
 * exactly), the HTTP status the code implies, a message a person can act on and optional
 * details. `toErrorBody` is the single renderer; unknown errors never leak their text.
 */

/** Stable codes and the HTTP status each implies. */
export const ERROR_CODES = {
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  BODY_TOO_LARGE: 413,
  /** A webhook body that is not UTF-8 text (integrations/webhooks: given to the Function exactly, or refused). */
  WEBHOOK_BODY_NOT_UTF8: 400,
  RATE_LIMITED: 429,
  LINK_INVALID: 410,
  UNAUTHENTICATED: 401,
  AUTH_REQUIRED: 401,
  FORBIDDEN: 403,
  ACCESS_DENIED: 403,
  ORGANISATION_REQUIRED: 403,
  /** A role or integration audience for a person outside the app's organisation (issue 12). */
  MEMBER_OUTSIDE_ORGANISATION: 403,
  CONFIRMATION_REQUIRED: 403,
  /** An unknown address asked for an account (agent onboarding) while SERVICE_REGISTRATION is off (our code). */
  REGISTRATION_CLOSED: 403,
  APP_TOKEN_NOT_ALLOWED: 403,
  // MCP (issue 18; our codes, docs/api.md): a tool not on an app-scoped token's focused builder surface;
  // an app-scoped token used on another app.
  TOOL_NOT_AVAILABLE: 403,
  TOKEN_SCOPE_MISMATCH: 403,
  NOT_FOUND: 404,
  HOST_NOT_FOUND: 404,
  APP_NOT_FOUND: 404,
  FUNCTION_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  APP_SLUG_TAKEN: 409,
  USER_EXISTS: 409,
  DEPLOY_IN_PROGRESS: 409,
  BUNDLE_INVALID: 422,
  MANIFEST_INVALID: 422,
  MANIFEST_APP_MISMATCH: 422,
  MIGRATION_FAILED: 422,
  MIGRATION_MODIFIED: 422,
  APP_NOT_DEPLOYED: 503,
  APP_NOT_ACTIVE: 503,
  NOT_IMPLEMENTED: 501,
  EMAIL_DELIVERY_FAILED: 502,
  AUTH_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500,
  FUNCTION_FAILED: 500,
  FUNCTION_IMPORT_FAILED: 500,
  FUNCTION_INVALID_RETURN: 500,
  FUNCTION_CRASHED: 502,
  FUNCTION_MEMORY_EXCEEDED: 502,
  FUNCTION_TIMEOUT: 504,
  /** `ctx.secrets` names a secret the release's manifest does not declare. */
  SECRET_NOT_DECLARED: 500,
  /** `ctx.secrets.require` of a declared secret without a value in the namespace. */
  SECRET_NOT_SET: 500,
  SECRET_NOT_FOUND: 404,
  /** A development namespace that has no release (deploy to it first). */
  DEV_NAMESPACE_NOT_FOUND: 404,
  /** A deploy would create a development namespace past the per-app limit (delete one first). */
  DEV_NAMESPACE_LIMIT_REACHED: 409,
  // Jobs (spec 3.1, 7.2; the codes other than the spec's two are ours).
  IDEMPOTENCY_KEY_REUSED: 409,
  QUEUE_NOT_ACTIVE: 409,
  QUEUE_NOT_DECLARED: 404,
  JOB_PAYLOAD_INVALID: 400,
  JOB_PAYLOAD_TOO_LARGE: 413,
  JOBS_LIMIT_REACHED: 429,
  ENQUEUE_TIMEOUT: 504,
  CRON_NOT_ACTIVE: 409,
  JOB_LEASE_EXPIRED: 502,
  JOB_NOT_FOUND: 404,
  CRON_NOT_FOUND: 404,
  // Custom domains (spec 5.5): mapping, and a Function's data authorization that ended.
  DOMAIN_TAKEN: 409,
  DOMAIN_LIMIT_REACHED: 409,
  DOMAIN_NOT_FOUND: 404,
  AUTH_EXPIRED: 401,
  // Organisation integrations (spec 2.6): another active app of the organisation publishes the name.
  INTEGRATION_NAME_TAKEN: 409,
  // Connections (spec 2.8): no published integration of the person's organisation by that app and name; no
  // connection the caller can see.
  INTEGRATION_NOT_FOUND: 404,
  CONNECTION_NOT_FOUND: 404,
  // Bindings and the broker (spec 2.7, 3.5, 5.6, 7.2).
  SLOT_NOT_FOUND: 404,
  BINDING_NOT_FOUND: 404,
  BINDING_NEEDS_PERSON: 403,
  INTEGRATION_SDK_TOO_OLD: 400,
  INTEGRATION_NOT_BOUND: 409,
  INTEGRATION_BINDING_SUSPENDED: 403,
  INTEGRATION_BINDING_REVOKED: 403,
  INTEGRATION_OPERATION_NOT_FOUND: 404,
  INTEGRATION_CAPABILITY_NOT_GRANTED: 403,
  INTEGRATION_RESULT_TOO_LARGE: 502,
  INTEGRATION_PROVIDER_FAILED: 502,
  INTEGRATION_PROVIDER_UNAVAILABLE: 503,
  INTEGRATION_RECONNECT_REQUIRED: 409,
  INTEGRATION_CONNECTION_REQUIRED: 409,
  INTEGRATION_USER_REQUIRED: 401,
  INTEGRATION_TEST_CONNECTION_REQUIRED: 409,
  // A development namespace in fake mode calling an operation that declares no `fake` (our code).
  INTEGRATION_FAKE_NOT_DECLARED: 409,
  // OAuth 2.0 (spec 4.4, 7.2): exchange or refresh invoked in development; a callback without a
  // flow this browser started (unknown, used, expired or another browser's state).
  INTEGRATION_OAUTH_FUNCTION_NOT_INVOCABLE: 400,
  OAUTH_STATE_INVALID: 400,
  // Integration events (spec 6.1; our codes): emit outside an operation, sync or webhook
  // invocation (or during OAuth exchange and refresh); a malformed event; a type the
  // contract does not declare; data over 64 KiB. Delivery outcomes kept as last errors.
  INTEGRATION_EMIT_UNAVAILABLE: 409,
  INTEGRATION_EVENT_INVALID: 400,
  INTEGRATION_EVENT_TYPE_NOT_DECLARED: 400,
  INTEGRATION_EVENT_TOO_LARGE: 413,
  INTEGRATION_EVENT_NOT_SUBSCRIBED: 409,
  INTEGRATION_EVENT_LEASE_EXPIRED: 502,
  // Managed files (spec 2.10, 4.3, 5.5, 7.2, 8; FILE_INPUT_CHANGED is the spec's, the others ours, docs/api.md).
  FILE_NOT_FOUND: 404,
  FILE_INVALID: 400,
  FILE_TOO_LARGE: 413,
  FILE_READ_ONLY: 403,
  FILE_INPUT_CHANGED: 409,
  FILE_GRANT_INVALID: 400,
  FILE_GRANT_TOO_LARGE: 413,
  FILE_GRANT_EXPIRED: 403,
  FILE_GRANT_SDK_TOO_OLD: 400,
  FILE_UPLOAD_NOT_FOUND: 409,
  // AI helpers (spec 2.10 ai, 4.3, 8; our codes, docs/api.md): configuration, input, attachment
  // limits (each violation its own code), the provider's answers (429, 5xx and timeouts retryable).
  AI_NOT_CONFIGURED: 501,
  AI_MODEL_NOT_ALLOWED: 403,
  AI_INPUT_INVALID: 400,
  AI_ATTACHMENT_INVALID: 400,
  AI_ATTACHMENT_URL_NOT_ACCEPTED: 400,
  AI_ATTACHMENT_TYPE_UNSUPPORTED: 415,
  AI_ATTACHMENT_TYPE_MISMATCH: 400,
  AI_ATTACHMENT_ANIMATED: 400,
  AI_ATTACHMENTS_TOO_MANY: 400,
  AI_IMAGE_TOO_LARGE: 413,
  AI_PDF_TOO_MANY_PAGES: 400,
  AI_PDF_NOT_MANAGED: 400,
  AI_PDF_NOT_ALONE: 400,
  AI_PDF_INVALID: 400,
  AI_PDF_TOO_LARGE: 413,
  AI_ATTACHMENTS_TOO_LARGE: 413,
  AI_STREAM_NOT_FOUND: 404,
  AI_OUTPUT_INVALID: 502,
  AI_PROVIDER_FAILED: 502,
  AI_PROVIDER_UNAVAILABLE: 503,
  AI_ATTACHMENTS_BUSY: 503,
  // Search (spec 2.11, 4.3, 5.5, 8; SEARCH_DECLARATION_INVALID, refusing a deploy, is ours, docs/api.md).
  SEARCH_DECLARATION_INVALID: 422,
  SEARCH_NOT_DECLARED: 404,
  SEARCH_INPUT_INVALID: 400,
  SEARCH_MODEL_MISMATCH: 400,
  SEARCH_DIMENSION_MISMATCH: 400,
  SEARCH_RESULT_TOO_LARGE: 413,
  SEARCH_UNAVAILABLE: 503,
  DATA_UNAVAILABLE: 503,
  // App email (spec 2.10 email, 6.4; our codes, docs/api.md): a send refused before it is
  // queued; delivery outcomes kept as a message's last error (EMAIL_DELIVERY_FAILED above
  // too); development injection into a release that receives no mail.
  EMAIL_INVALID: 400,
  EMAIL_ALIAS_NOT_DECLARED: 400,
  EMAIL_TOO_MANY_RECIPIENTS: 400,
  EMAIL_TOO_LARGE: 413,
  EMAIL_RATE_LIMITED: 429,
  EMAIL_REJECTED: 502,
  EMAIL_LEASE_EXPIRED: 502,
  EMAIL_INBOUND_NOT_DECLARED: 409,
  // Web push (spec 2.10 notifications; our codes, docs/api.md): a send refused before it is
  // queued; a subscription the platform will not store; delivery outcomes kept as a
  // delivery's last error.
  NOTIFICATION_INVALID: 400,
  NOTIFICATION_TOO_LARGE: 413,
  NOTIFICATIONS_LIMIT_REACHED: 429,
  PUSH_SUBSCRIPTION_INVALID: 400,
  PUSH_SUBSCRIPTION_EXPIRED: 410,
  PUSH_SUBSCRIPTION_GONE: 410,
  PUSH_ENDPOINT_REFUSED: 400,
  PUSH_REJECTED: 502,
  PUSH_SERVICE_UNAVAILABLE: 503,
  PUSH_LEASE_EXPIRED: 502,
  // Realtime (issue 20; our codes, docs/api.md): a request to the socket's path that is not a
  // WebSocket handshake, or one no process can take now; a frame, join or message refused
  // (sent as an error frame on the socket).
  UPGRADE_REQUIRED: 426,
  REALTIME_UNAVAILABLE: 503,
  REALTIME_MESSAGE_INVALID: 400,
  REALTIME_MESSAGE_TOO_LARGE: 413,
  REALTIME_NOT_JOINED: 409,
  REALTIME_ALREADY_JOINED: 409,
  REALTIME_TOO_MANY_CHANNELS: 429,
  REALTIME_TABLE_NOT_FOUND: 404,
  REALTIME_TABLE_NO_PRIMARY_KEY: 400,
  REALTIME_FILTER_INVALID: 400,
} as const

export type ErrorCode = keyof typeof ERROR_CODES

export interface ServiceErrorOptions {
  details?: unknown
  cause?: unknown
  /** Overrides the status implied by the code (rarely needed). */
  status?: number
}

export class ServiceError extends Error {
  override name = 'ServiceError'
  readonly code: ErrorCode
  readonly status: number
  readonly details: unknown

  constructor(code: ErrorCode, message: string, options: ServiceErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = options.status ?? ERROR_CODES[code]
    this.details = options.details
  }
}

/** A feature that is specified but not built yet fails with this, naming the feature. */
export function notImplemented(feature: string): ServiceError {
  return new ServiceError('NOT_IMPLEMENTED', `${feature} is not available on this platform yet`, {
    details: { feature },
  })
}

/** Normalises anything thrown into an Error, keeping the original as `cause`. */
export function coerceError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown
  return new Error(typeof thrown === 'string' ? thrown : 'non-error value thrown', { cause: thrown })
}

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown }
}

/** Renders an error as the HTTP body and status; unknown errors become a generic 500. */
export function toErrorBody(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof ServiceError) {
    const body: ErrorBody = { error: { code: error.code, message: error.message } }
    if (error.details !== undefined) body.error.details = error.details
    return { status: error.status, body }
  }
  return {
    status: 500,
    body: { error: { code: 'INTERNAL_ERROR', message: 'The platform failed to handle this request' } },
  }
}
