// The handler context (spec 2.10): exactly the members a Function's handler receives.
//
// Types only. Every member except `input` is implemented by the platform runtime, which
// builds one context per invocation and hands it to `runFunction`; this SDK adds the
// parsed `input`. Where the spec leaves a shape open ("not shown") these types make the
// smallest practical choice, and the doc comment on the member says so.

import type { Infer, Schema } from './schema.ts'

/** A JSON object: queue payloads, operation input, event data. */
export type JsonObject = { [key: string]: unknown }

/** A table row. Every table has the primary key `id`; other columns are the app's own. */
export type Row = Record<string, unknown>

/** A primary-key value (uuid text, or a number for integer keys). */
export type RowId = string | number

/** A value an equality filter compares with; `null` means IS NULL. */
export type WhereValue = string | number | boolean | null

/** SDK 2.3.0: the route that reached the Function, read-only. `null` for non-route calls. */
export interface HttpRoute {
  /** Upper case, such as "GET". */
  readonly method: string
  readonly pathname: string
  /** Path parameters by name: `/tasks/:id` gives `{ id }`. */
  readonly params: Readonly<Record<string, string>>
  /** The query string; a `URLSearchParams` fits this read-only view. */
  readonly query: ReadonlyQuery
}

/** The reading half of `URLSearchParams`. */
export interface ReadonlyQuery {
  get(name: string): string | null
  getAll(name: string): string[]
  has(name: string): boolean
  keys(): IterableIterator<string>
  entries(): IterableIterator<[string, string]>
  toString(): string
}

/** The signed-in caller. `user` is `null` for anonymous and `system` invocations. */
export interface FunctionUser {
  readonly id: string
}

/** Queue delivery metadata; `attempt` is 1 for the first delivery. */
export interface JobDelivery {
  readonly id: string
  readonly queue: string
  readonly attempt: number
}

export interface ListOptions {
  /** Equality filters, combined with AND. */
  readonly where?: Readonly<Record<string, WhereValue>>
  /** Rows to return at most; the platform bounds every list. */
  readonly limit?: number
  /** Columns to return; all columns when left out. */
  readonly select?: readonly string[]
}

/** Bounded operations on one table, under the invocation's identity and row-level security. */
export interface TableClient {
  /** The row, or `null` when none is visible to this invocation. */
  getById(id: RowId): Promise<Row | null>
  /** Applies `patch` and returns the updated row, or `null` when no row was visible (our choice; not shown). */
  updateById(id: RowId, patch: Row): Promise<Row | null>
  /** Inserts a row and returns it as stored (so the policy must also allow reading it). */
  create(row: Row): Promise<Row>
  list(options?: ListOptions): Promise<Row[]>
}

/** The unpublished SDK 2.4 search candidate (spec 2.11, 4.3); gated by the manifest. */
export interface SearchOptions {
  readonly mode: 'fullText' | 'vector' | 'hybrid'
  readonly query?: string
  readonly vector?: readonly number[]
  readonly model?: string
  readonly where?: Readonly<Record<string, WhereValue>>
  /** 1 to 50; default 10. */
  readonly limit?: number
}

export interface SearchHit {
  /** Only the search's declared selected columns. */
  readonly record: Row
  readonly fullTextScore: number | null
  readonly fullTextRank: number | null
  readonly vectorDistance: number | null
  readonly vectorSimilarity: number | null
  readonly vectorRank: number | null
  readonly fusionScore: number | null
}

export interface DataClient {
  table(name: string): TableClient
  search(name: string, options: SearchOptions): Promise<{ readonly hits: readonly SearchHit[] }>
}

/**
 * An opaque managed-file reference: store it and pass it back, never parse it. A string,
 * so it travels in JSON input, job payloads and AI attachments.
 */
export type FileRef = string

/** Bytes to store. Strings are stored as UTF-8. */
export type FileData = Uint8Array | ArrayBuffer | Blob | string

/** File metadata. The spec names only `contentType`; the other fields are our choice. */
export interface FileInfo {
  /** The file's stable id (`info` takes it as well as a reference). */
  readonly id: string
  /** The current reference (a replacement issues a new one). */
  readonly ref: FileRef
  readonly name: string
  readonly contentType: string
  /** Size in bytes. */
  readonly size: number
  /** The content generation: 1 at upload, one more at each replacement. */
  readonly generation: number
  /** ISO 8601 timestamps of the upload and of the latest replacement. */
  readonly createdAt: string
  readonly updatedAt: string
}

export interface FilesClient {
  upload(file: { readonly data: FileData; readonly name: string; readonly contentType: string }): Promise<FileRef>
  download(ref: FileRef): Promise<FileInfo & { readonly data: Uint8Array }>
  /** Stores new content and returns a new reference; the old one stops working. */
  replace(ref: FileRef, file: { readonly data: FileData; readonly name: string }): Promise<FileRef>
  remove(ref: FileRef): Promise<void>
  /** Takes a file id or a reference. */
  info(idOrRef: string): Promise<FileInfo>
}

/** An AI attachment: a managed file (images or one PDF) or inline image bytes. */
export type Attachment =
  | { readonly type: 'file'; readonly file: FileRef; readonly detail?: 'original' }
  | {
    readonly type: 'image'
    readonly data: Uint8Array
    readonly contentType: 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif'
  }

export interface AiClient {
  generateText(options: {
    readonly instructions?: string
    readonly prompt: string
    readonly attachments?: readonly Attachment[]
  }): Promise<string>
  /**
   * generateText's request answered as a stream of text pieces as the model writes them;
   * return it from an HTTP-called Function to stream it to the caller.
   */
  streamText(options: {
    readonly instructions?: string
    readonly prompt: string
    readonly attachments?: readonly Attachment[]
  }): Promise<ReadableStream<string>>
  /** The model's answer, parsed with `schema` (an SDK schema, so the result is typed). */
  generateObject<S extends Schema<unknown>>(options: {
    readonly prompt: string
    readonly schema: S
    readonly attachments?: readonly Attachment[]
  }): Promise<Infer<S>>
  generateImage(options: { readonly prompt: string }): Promise<{
    readonly data: Uint8Array
    readonly contentType: 'image/png'
    readonly revisedPrompt?: string
  }>
}

/** Message fields beyond the sender alias are not shown in the spec; these are our choice. */
export interface EmailMessage {
  /** An alias declared in service.yaml (`email.aliases`), such as "support"; it sends as `support@<app>.<EMAIL_DOMAIN>`. */
  readonly from: string
  /** Plain addresses (`ada@example.com`, no display names), at most EMAIL_MAX_RECIPIENTS (default 50). */
  readonly to: string | readonly string[]
  /** One line: no CR or LF. */
  readonly subject: string
  /** At least one of text and html. */
  readonly text?: string
  readonly html?: string
  /** One plain address. */
  readonly replyTo?: string
}

export interface EmailClient {
  /**
   * Queues the message durably and returns its id; the platform delivers it (retrying the
   * SMTP server's temporary failures) after the call returns.
   */
  send(message: EmailMessage): Promise<{ readonly id: string }>
}

/**
 * The input of the `email.inbound.function` (a system Function) for each message received
 * at one of the app's aliases. Header fields are as sent (`from` can be forged).
 */
export interface InboundEmail {
  /** The platform's id of the received message (stable across retries). */
  readonly id: string
  /** ISO 8601. */
  readonly receivedAt: string
  /** The From header's address ('' when there is none). */
  readonly from: string
  /** The To header's addresses. */
  readonly to: readonly string[]
  /** The app's addresses the message was delivered to (SMTP RCPT TO), `+tag` included. */
  readonly recipients: readonly string[]
  readonly subject: string
  readonly text: string | null
  readonly html: string | null
  /** Every header line, unfolded, values as sent (encoded words not decoded); at most 200. */
  readonly headers: readonly { readonly name: string; readonly value: string }[]
  /** Each attachment stored as a managed file of the app (`ctx.files.download(file)`). */
  readonly attachments: readonly { readonly file: string; readonly name: string; readonly contentType: string; readonly size: number }[]
}

/**
 * A visible web push notification for one person of the app (fields are not shown in the
 * spec; these are our choice, docs/api.md). The JSON the browser receives, `{ id, title,
 * body, url?, tag? }`, is at most 3,993 bytes (UTF-8).
 */
export interface Notification {
  /** The person (`ctx.user.id` of an earlier call); only their subscriptions to this app receive it. */
  readonly userId: string
  /** The notification's heading; not empty. */
  readonly title: string
  /** Its text (may be empty). */
  readonly body: string
  /** Opened on a click: a path of this app such as `/orders/42`, or a URL on the app's own origin. */
  readonly url?: string
  /** 1 to 64 characters: a newer notification with the same tag replaces the shown one. */
  readonly tag?: string
}

/** What `send` did: the notification's id, and how many subscriptions a delivery was queued for. */
export interface NotificationSent {
  readonly id: string
  /** 0 when the person has no subscription here or may not use the app. */
  readonly subscriptions: number
}

export interface NotificationsClient {
  /**
   * Queues the notification durably for each of the person's push subscriptions to this app;
   * the platform delivers it in the background, retried while push services are unavailable.
   *   const { subscriptions } = await notifications.send({ userId, title: 'Order shipped', body: 'On its way', url: '/orders/42' })
   * Fails NOTIFICATION_INVALID, NOTIFICATION_TOO_LARGE or NOTIFICATIONS_LIMIT_REACHED.
   */
  send(notification: Notification): Promise<NotificationSent>
}

export interface EnqueueOptions {
  /** Required. The same key with the same payload returns the original job. */
  readonly idempotencyKey: string
  /** At most seven days. */
  readonly delaySeconds?: number
  /** Limits only this producer's request to the broker. */
  readonly timeoutMs?: number
  /** SDK 2.4.0: grants the consumer download access to 1 to 16 files. */
  readonly files?: { readonly read: readonly FileRef[] }
}

export type JobState = 'queued' | 'running' | 'retry_wait' | 'succeeded' | 'dead_lettered'

/**
 * A job's safe metadata; never its payload, idempotency key or enqueuing user. The spec
 * names "state, timestamps, latest bounded error"; the field names are our choice.
 */
export interface Job {
  readonly id: string
  /** The queue; `cron:<name>` for a cron run. */
  readonly queue: string
  readonly kind: 'queue' | 'cron'
  readonly state: JobState
  /** Attempts started so far; the first delivery is attempt 1. */
  readonly attempts: number
  readonly maxAttempts: number
  /** ISO 8601 timestamps. */
  readonly createdAt: string
  readonly updatedAt: string
  /** When the next attempt is due (`queued`, `retry_wait`), else null. */
  readonly runAt: string | null
  /** When the latest attempt started, or null. */
  readonly startedAt: string | null
  /** When the job succeeded or was dead-lettered, or null. */
  readonly finishedAt: string | null
  /** The latest failure, bounded (message at most 1,000 characters). */
  readonly lastError: { readonly code: string; readonly message: string } | null
}

export interface JobsClient {
  /** Enqueues to a declared queue; `payload` is a JSON object of at most 64 KiB. */
  enqueue(queue: string, payload: JsonObject, options: EnqueueOptions): Promise<Job>
  /** The job, or `null` when this app has no such job (our choice; not shown). */
  get(jobId: string): Promise<Job | null>
}

export interface IntegrationClient {
  /** Calls a provider operation; resolves to the provider Function's result. */
  call(operation: string, input: JsonObject): Promise<unknown>
}

export interface IntegrationsClient {
  /** A client for the manifest slot `slot` (`integrations.<slot>`). */
  use(slot: string): IntegrationClient
}

/** Asynchronous so the platform may broker values per call (connection credentials). */
export interface SecretsClient {
  /** The secret's value, or `null` when it is not provisioned. */
  get(name: string): Promise<string | null>
  /** The secret's value; throws a ServiceError when it is not provisioned. */
  require(name: string): Promise<string>
}

export type LogFields = Readonly<Record<string, unknown>>

export interface Logger {
  debug(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  error(message: string, fields?: LogFields): void
}

/** A change a provider reports for its connection (spec 6.1). */
export interface IntegrationEventInput {
  /** A declared dotted lowercase type, such as "contact.created". */
  readonly type: string
  /** The provider's stable id for the change; re-emitting it creates no new delivery. */
  readonly id: string
  /** At most 64 KiB. */
  readonly data: JsonObject
}

interface IntegrationInvocationBase {
  readonly connectionId: string
  /** Returns the number of new deliveries. Rejects during OAuth exchange and refresh. */
  emit(event: IntegrationEventInput): Promise<number>
}

/** SDK 2.6.0: why a provider Function runs. */
export type IntegrationInvocation =
  | (IntegrationInvocationBase & {
    readonly trigger: 'operation'
    readonly operation: string
    readonly consumerAppId: string
  })
  | (IntegrationInvocationBase & {
    readonly trigger: 'sync' | 'webhook' | 'oauth'
    readonly operation?: never
    readonly consumerAppId?: never
  })

/** What the handler receives: exactly the members of spec 2.10. */
export interface FunctionContext<Input> {
  /** The input, already parsed by the Function's schema. */
  readonly input: Input
  readonly http: HttpRoute | null
  readonly user: FunctionUser | null
  readonly job: JobDelivery | null
  readonly data: DataClient
  readonly files: FilesClient
  readonly ai: AiClient
  readonly email: EmailClient
  readonly notifications: NotificationsClient
  readonly jobs: JobsClient
  readonly integrations: IntegrationsClient
  readonly secrets: SecretsClient
  readonly log: Logger
  readonly requestId: string
  readonly environment: 'production' | 'development'
  /** SDK 2.6.0: `null` outside an integration-provider invocation. */
  readonly integration: IntegrationInvocation | null
}

/** What the platform runtime supplies to `runFunction`: the context without `input`. */
export type InvocationContext = Omit<FunctionContext<unknown>, 'input'>
