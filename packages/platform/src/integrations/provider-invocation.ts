/**
 * How the platform runs a provider app's Function for an integration (spec 5.5): a `system`
 * invocation of the provider's active production release, with `ctx.integration` set and the
 * connection's credentials readable through `ctx.secrets.get(NAME)` for that invocation only
 * (never stored in the provider's environment, logs, errors or database). The broker uses it
 * for operations; OAuth for `exchange` and `refresh`; sync and webhooks (next issue) likewise.
 *
 * This module is the contract between the callers and the Functions host: the host's
 * implementation is `createProviderInvoker` (functions/); callers receive an `InvokeProvider`.
 */
import type { App } from '../apps/apps.ts'

export type IntegrationTrigger = 'operation' | 'sync' | 'webhook' | 'oauth'

/** `ctx.integration` inside the provider's Function (SDK 2.6.0). */
export interface IntegrationContext {
  readonly connectionId: string
  readonly trigger: IntegrationTrigger
  /** For operations: the operation's name, e.g. `orders.list`. */
  readonly operation?: string
  /** For operations: the consumer app that called. */
  readonly consumerAppId?: string
}

export interface ProviderInvocation {
  readonly providerAppId: string
  /** The provider app as the caller just read it, active (the broker's one statement); else the invoker reads it. */
  readonly providerApp?: App
  /** A `system` Function of the provider app's active production release. */
  readonly functionName: string
  readonly input: unknown
  readonly integration: IntegrationContext
  /**
   * Values the Function reads with `ctx.secrets.get(NAME)` for this invocation only, over the
   * provider's own declared secrets (connection credentials; the OAuth access token under its
   * declared name). Redacted from everything the invocation writes or throws. null: a
   * credential the contract declares that the connection left empty (optional).
   */
  readonly secrets: Readonly<Record<string, string | null>>
  /**
   * Secret values handed in `input` (an OAuth exchange's code and PKCE verifier, a refresh's
   * refresh token): redacted from everything the invocation writes or throws, like `secrets`,
   * though not readable through `ctx.secrets`.
   */
  readonly redact?: readonly string[]
  /** Whether `integration.emit` may be called (false for OAuth exchange and refresh). */
  readonly mayEmit: boolean
  readonly timeoutMs: number
  /**
   * True: `timeoutMs` holds whatever the Function declares (a sync run has the full 15
   * minutes, spec 8, as a queue attempt has its queue's timeout). Otherwise the Function's own
   * `timeoutSeconds` applies when shorter.
   */
  readonly fixedTimeout?: boolean
  /** Correlation with the consumer's request. */
  readonly requestId?: string
}

/** A typed error the provider threw (`errors.badRequest(code, message, details)` and kin). */
export interface ProviderTypedError {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly details?: unknown
}

export type ProviderResult =
  | { readonly ok: true; readonly value: unknown }
  /** A typed error (4xx, or 503 for `errors.unavailable`). */
  | { readonly ok: false; readonly kind: 'typed'; readonly error: ProviderTypedError }
  /** An untyped throw, an invalid result, an import failure or a crash. */
  | { readonly ok: false; readonly kind: 'failed'; readonly message: string }
  | { readonly ok: false; readonly kind: 'timeout' }

export type InvokeProvider = (invocation: ProviderInvocation) => Promise<ProviderResult>
