// The validated form of service.yaml (schema version 3) and the shapes of validation
// results. Every default is already applied in a Manifest, so consumers (deploy, jobs,
// cron, integrations) never re-derive them; members are optional only where absence
// means something.

export type Severity = 'error' | 'warning'

export interface Problem {
  readonly severity: Severity
  /** A code from MANIFEST_PROBLEMS, for example "MANIFEST_UNKNOWN_FIELD". */
  readonly code: string
  /** Where in the document, for example "queues[0].function"; "" for the whole file. */
  readonly path: string
  /** 1-based line of the offending node (for a missing field: its parent mapping). */
  readonly line: number
  /** 1-based column. */
  readonly column: number
  readonly message: string
}

export interface PublishedIntegration {
  readonly appSlug: string
  readonly capabilities: readonly string[]
  readonly eventTypes: readonly string[]
}

export interface ValidationContext {
  /** Bundle file paths relative to the bundle root, e.g. "functions/create-task.ts"; when given, entrypoints must exist. */
  readonly files?: ReadonlySet<string>
  /** Integrations published by OTHER active apps of the same organisation, by integration name. */
  readonly publishedIntegrations?: ReadonlyMap<string, PublishedIntegration>
  /** The newest SDK version this platform supports, e.g. "2.6.0"; defaults to PLATFORM_SDK_VERSION. */
  readonly platformSdkVersion?: string
}

export interface ManifestResult {
  /** null when there is any error; warnings alone still yield a manifest. */
  readonly manifest: Manifest | null
  readonly errors: Problem[]
  readonly warnings: Problem[]
}

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject
export interface JsonObject {
  readonly [key: string]: JsonValue
}
/** A JSON Schema document: an object schema or the boolean schemas true/false. */
export type JsonSchema = boolean | JsonObject

export type AppVisibility = 'public' | 'private'
export type FunctionAccess = 'user' | 'public' | 'system'
export type RouteMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
export type SlotAccount = 'app' | 'calling_user'
export type TextSearchLanguage =
  | 'simple' | 'arabic' | 'armenian' | 'basque' | 'catalan' | 'danish' | 'dutch' | 'english'
  | 'finnish' | 'french' | 'german' | 'greek' | 'hindi' | 'hungarian' | 'indonesian' | 'irish'
  | 'italian' | 'lithuanian' | 'nepali' | 'norwegian' | 'portuguese' | 'romanian' | 'russian'
  | 'serbian' | 'spanish' | 'swedish' | 'tamil' | 'turkish' | 'yiddish'

export interface Manifest {
  readonly schemaVersion: 3
  readonly app: AppDeclaration
  readonly runtime: { readonly sdk: { readonly version: string } }
  readonly functions: readonly FunctionDeclaration[]
  readonly queues: readonly QueueDeclaration[]
  readonly cron: readonly CronDeclaration[]
  /** Secret name -> "required"; values are provisioned separately. */
  readonly secrets: Readonly<Record<string, 'required'>>
  readonly data: { readonly search: readonly SearchDeclaration[] }
  /** Consumer slots by slot name. */
  readonly integrations: Readonly<Record<string, IntegrationSlot>>
  readonly provides?: { readonly integration: IntegrationContract }
  /** Absent: the app sends and receives no email. */
  readonly email?: EmailDeclaration
  /** Absent: `ctx.ai` uses the operator's default models. */
  readonly ai?: AiDeclaration
}

export interface AiDeclaration {
  /** generateText, streamText and generateObject use it; one of the platform's allowed text models. */
  readonly textModel?: string
  /** generateImage uses it; one of the platform's allowed image models. */
  readonly imageModel?: string
}

export interface EmailDeclaration {
  /** Local parts the app sends from: `<alias>@<app slug>.<EMAIL_DOMAIN>`; default []. */
  readonly aliases: readonly string[]
  /** Mail to an alias (or `<alias>+<tag>`) invokes this system Function. */
  readonly inbound?: { readonly function: string }
}

export interface AppDeclaration {
  /** The app slug. */
  readonly id: string
  readonly name?: string
  /** Default "private". */
  readonly visibility: AppVisibility
}

export interface FunctionDeclaration {
  readonly name: string
  readonly entrypoint: string
  readonly access: FunctionAccess
  /** Default 30. */
  readonly timeoutSeconds: number
  /** Default []. */
  readonly routes: readonly FunctionRoute[]
}

export interface FunctionRoute {
  readonly method: RouteMethod
  /** Such as "/api/tasks/:id". */
  readonly path: string
}

export interface QueueDeclaration {
  readonly name: string
  /** A system Function. */
  readonly function: string
  /** Default 1. */
  readonly concurrency: number
  /** Default 3; counts the first delivery. */
  readonly maxAttempts: number
  /** Default 30. */
  readonly retryDelaySeconds: number
  /** Default false. */
  readonly retryBackoff: boolean
  /** Default 60. */
  readonly timeoutSeconds: number
}

export interface CronDeclaration {
  readonly name: string
  /** Five-field cron expression, validated by lib/cron-expression.ts. */
  readonly schedule: string
  /** A system Function. */
  readonly function: string
  /** Default true. */
  readonly enabled: boolean
  /** IANA name; default "UTC". */
  readonly timezone: string
}

export interface SearchDeclaration {
  readonly name: string
  readonly table: string
  /** Always includes "id". */
  readonly select: readonly string[]
  /** Scalar equality filter columns; default []. */
  readonly filters: readonly string[]
  readonly fullText?: { readonly language: TextSearchLanguage; readonly columns: readonly string[] }
  readonly vector?: { readonly column: string; readonly dimensions: number; readonly model: string }
}

export interface IntegrationSlot {
  readonly provider: 'custom'
  readonly integration: string
  readonly account: SlotAccount
  readonly cardinality: 'one'
  readonly capabilities: readonly string[]
  /** Only for account: app. */
  readonly events?: SlotEvents
}

export interface SlotEvents {
  /** A system Function. */
  readonly function: string
  /** Absent means every event type of the slot's granted capabilities. */
  readonly types?: readonly string[]
}

export interface IntegrationContract {
  readonly name: string
  readonly title: string
  readonly description: string
  /** Default []. */
  readonly credentials: readonly IntegrationCredential[]
  readonly authorization?: OAuth2Authorization
  readonly capabilities: readonly IntegrationCapability[]
  /** Default []. */
  readonly operations: readonly IntegrationOperation[]
  readonly sync?: IntegrationSync
  readonly webhook?: { readonly function: string }
  /** Default []. */
  readonly events: readonly IntegrationEvent[]
}

export interface IntegrationCredential {
  readonly name: string
  readonly label: string
  /** Default true. */
  readonly secret: boolean
  /** Default false. */
  readonly optional: boolean
}

export interface OAuth2Authorization {
  readonly type: 'oauth2'
  readonly authorizationUrl: string
  readonly clientId: string
  readonly scopes: readonly string[]
  /** A system Function. */
  readonly exchange: string
  /** A system Function. */
  readonly refresh?: string
  /** Default true. */
  readonly pkce: boolean
  /** Default "OAUTH_ACCESS_TOKEN". */
  readonly accessToken: string
}

export interface IntegrationCapability {
  readonly name: string
  readonly description: string
}

export interface IntegrationOperation {
  readonly name: string
  readonly capability: string
  /** A system Function. */
  readonly function: string
  readonly description: string
  readonly input?: JsonSchema
  readonly output?: JsonSchema
  /** Static output for development; may be null, so absence is distinct from null. */
  readonly fake?: JsonValue
}

export interface IntegrationSync {
  /** A system Function. */
  readonly function: string
  readonly schedule: string
  /** IANA name; default "UTC". */
  readonly timezone: string
}

export interface IntegrationEvent {
  readonly type: string
  readonly capability: string
  readonly description: string
  readonly fake?: JsonObject
}
