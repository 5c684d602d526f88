/**
 * One MCP tool: its name, description, strict input schema (unknown keys are refused), the
 * surfaces it is on, and the domain call it makes. Tools on an app name it in `appId`; an
 * app-scoped principal reaches only that app (TOKEN_SCOPE_MISMATCH otherwise).
 */
import type { z } from 'zod'
import type { AiSettings } from '../config.ts'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import type { HostUrls } from '../http/hosts.ts'
import type { SecretStore } from '../secrets/index.ts'
import type { FunctionHost, DevInvokeIntegrations } from '../functions/index.ts'
import type { User } from '../identity/index.ts'
import type { Principal, Surface } from './principal.ts'

/** A mail sender (identity's Mail): onboarding and token requests email people. */
export interface McpMailer {
  send(message: { to: string; subject: string; text: string; html?: string }): Promise<void>
}

/** What the tools call into; the composition root builds it. */
export interface McpDeps {
  db: Db
  clock: Clock
  logger: Logger
  urls: HostUrls
  mailer: McpMailer
  secrets: SecretStore
  /** The Functions host (a getter: the composition root builds it after the routes). */
  host: () => FunctionHost
  /** What integrations add to a development invocation, as the owner API route gets it. */
  devInvoke?: DevInvokeIntegrations
  /** Seals new app access tokens for their one-time reveal link. */
  revealKey: Uint8Array
  /** The platform's AI models, which a deployed manifest's `ai` section must name (deploy/). */
  ai?: AiSettings
  /** SERVICE_REGISTRATION: whether `start_onboarding` may create an identity for a new address. */
  registration: boolean
}

/** One call's context: the deps, the caller and the caller's network address (for rate limits). */
export interface ToolContext {
  deps: McpDeps
  principal: Principal
  clientAddress: string
}

/** The context of a tool that needs a person. */
export interface PersonContext extends ToolContext {
  user: User
}

export interface ToolDefinition<S extends z.ZodObject = z.ZodObject> {
  name: string
  description: string
  input: S
  /** The surfaces that list and run it. */
  surfaces: readonly Surface[]
  /** Whether it changes nothing (an MCP annotation for clients). */
  readOnly: boolean
  run(context: ToolContext, input: z.infer<S>): Promise<Record<string, unknown>>
}

/** Tools a person calls on the full surface and, on their one app, on the focused one. */
export const BUILDER: readonly Surface[] = ['full', 'focused']
/** Production diagnostics and account-wide tools: the full surface only. */
export const FULL_ONLY: readonly Surface[] = ['full']

export function defineTool<S extends z.ZodObject>(tool: ToolDefinition<S>): ToolDefinition {
  return tool as unknown as ToolDefinition
}
