/**
 * `ctx.ai` (spec 2.10, 4.3): the platform answers a Function's AI calls by calling the
 * configured OpenAI-compatible provider (provider.ts) itself, so the key never enters the
 * Deno worker. `generateText`, `generateObject` (the model is asked for JSON matching the
 * schema's JSON Schema; the worker then parses the answer with the SDK schema, and a
 * mismatch is AI_OUTPUT_INVALID), `generateImage` (PNG bytes) and `streamText`: the provider
 * streams (`stream: true`) and the Function's ReadableStream pulls one piece per
 * `streamText.next` call, so text reaches an HTTP caller as the model writes it. Open
 * streams belong to their invocation and are cancelled when it ends. Inline images too
 * large for one context call arrive beforehand in pieces (`attachment.*`, staging.ts) and
 * are held until the call that refers to them ends.
 */
import { randomUUID } from 'node:crypto'
import { generateImage, generateText, jsonSchema, Output, streamText, type ModelMessage } from 'ai'
import { fileTypeFromBuffer } from 'file-type'
import type { AiSettings } from '../config.ts'
import type { Logger } from '../lib/logger.ts'
import { ServiceError } from '../lib/errors.ts'
import { checkAttachments, type ManagedFileBytes } from './attachments.ts'
import { createAttachmentStaging } from './staging.ts'
import { createAiProvider, providerError, type ImageAnswer } from './provider.ts'
import { modelFor, type ModelKind } from './models.ts'
import type { AiDeclaration } from '../manifest/index.ts'

/** Longest prompt and instructions, in characters (a context call carries at most 1 MiB anyway). */
export const MAX_PROMPT_CHARS = 256 * 1024
/** Most streams one invocation may hold open at once. */
const MAX_OPEN_STREAMS = 8

export interface AiDeps<Identity> {
  readonly settings: AiSettings
  readonly logger: Logger
  /** Reads a managed file's bytes under the invocation's authority (files/index.ts); absent until wired. */
  readonly readFile?: (input: ReadFileInput<Identity>) => Promise<ManagedFileBytes>
  /** A release's `ai` section (models.ts createReleaseModels); absent: every call uses the defaults. */
  readonly releaseModels?: (releaseId: string) => Promise<AiDeclaration | undefined>
}

/** What reading an attachment's managed file takes (files/index.ts `readManagedFile`'s input). */
export interface ReadFileInput<Identity> {
  readonly appId: string
  readonly devName: string
  readonly identity: Identity
  readonly user: { readonly id: string } | null
  readonly job: { readonly id: string } | null
  readonly ref: string
  /** A larger file is not read: only its size and first `headBytes` bytes are answered. */
  readonly maxBytes: number
  readonly headBytes: number
}

/** A `ctx.ai` call with the invocation as the Functions host knows it. */
export interface AiContextCall<Identity> {
  readonly appId: string
  readonly devName: string
  readonly identity: Identity
  readonly user: { readonly id: string } | null
  readonly job: { readonly id: string } | null
  readonly method: string
  readonly args: readonly unknown[]
  /** Aborts when the invocation ends: open streams and requests stop. */
  readonly signal: AbortSignal
  /** The invocation's own record (the key of its open streams). */
  readonly invocation: object
  /** The release the invocation runs, whose `ai` section may choose the models. */
  readonly releaseId?: string
}

export interface Ai<Identity> {
  answer(call: AiContextCall<Identity>): Promise<unknown>
  /** Bytes of inline images staged for calls (staging.ts) and not yet given back, over all invocations. */
  stagedBytes(): number
}

interface OpenStream {
  readonly reader: ReadableStreamDefaultReader<string>
  readonly abort: AbortController
}

interface TextRequest {
  readonly system?: string
  readonly messages: ModelMessage[]
}

export function createAi<Identity>(deps: AiDeps<Identity>): Ai<Identity> {
  const provider = createAiProvider(deps.settings)
  const timeoutMs = deps.settings.timeoutMs
  const streams = new WeakMap<object, Map<string, OpenStream>>()
  const staging = createAttachmentStaging()

  /** The model the call's release chose for `kind` (checked against the operator's lists), or null for the default. */
  async function chosenModel(call: AiContextCall<Identity>, kind: ModelKind): Promise<string | null> {
    const choice = call.releaseId === undefined || deps.releaseModels === undefined ? undefined : await deps.releaseModels(call.releaseId)
    return modelFor(deps.settings, { kind, choice })
  }

  /** Runs `work` with a signal that ends with the invocation or after the timeout, mapping failures. */
  async function withTimeout<T>(signal: AbortSignal, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController()
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      controller.abort()
    }, timeoutMs)
    const onEnd = () => controller.abort()
    signal.addEventListener('abort', onEnd, { once: true })
    try {
      return await work(controller.signal)
    } catch (error) {
      throw failure(error, timedOut)
    } finally {
      clearTimeout(timer)
      signal.removeEventListener('abort', onEnd)
    }
  }

  function failure(error: unknown, timedOut: boolean): ServiceError {
    const mapped = providerError(error, { timedOut, timeoutMs, redact: provider.redact })
    if (mapped.code === 'AI_PROVIDER_UNAVAILABLE' || mapped.code === 'AI_PROVIDER_FAILED') {
      deps.logger.warn('ai provider call failed', { code: mapped.code, message: provider.redact(mapped.message) })
    }
    return mapped
  }

  /** The request of a text call; the staged images it refers to are pushed to `used`, to be given back when it ends. */
  async function textRequest(call: AiContextCall<Identity>, options: Record<string, unknown>, allowed: readonly string[], used: string[]): Promise<TextRequest> {
    for (const key of Object.keys(options)) {
      if (!allowed.includes(key)) throw inputInvalid(`ctx.ai.${call.method} takes no option "${key.slice(0, 64)}"`)
    }
    const prompt = text(options.prompt, 'prompt', true)!
    const instructions = text(options.instructions, 'instructions', false)
    const readFile = deps.readFile
    const parts = await checkAttachments(
      staging.resolve(call, options.attachments, used),
      readFile === undefined
        ? undefined
        : (ref, { maxBytes, headBytes }) => readFile({ appId: call.appId, devName: call.devName, identity: call.identity, user: call.user, job: call.job, ref, maxBytes, headBytes }),
    )
    const content: ModelMessage = parts.length === 0
      ? { role: 'user', content: prompt }
      : { role: 'user', content: [{ type: 'text', text: prompt }, ...parts] }
    return { ...(instructions === undefined ? {} : { system: instructions }), messages: [content] }
  }

  function openStreams(invocation: object, signal: AbortSignal): Map<string, OpenStream> {
    let open = streams.get(invocation)
    if (open === undefined) {
      const created = new Map<string, OpenStream>()
      streams.set(invocation, created)
      signal.addEventListener('abort', () => {
        for (const stream of created.values()) stream.abort.abort()
        created.clear()
      }, { once: true })
      open = created
    }
    return open
  }

  /** The next piece of an open stream, or null at its end; each wait has the provider timeout. */
  async function nextPiece(stream: OpenStream): Promise<string | null> {
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      stream.abort.abort()
    }, timeoutMs)
    try {
      const next = await stream.reader.read()
      if (timedOut) throw new Error('timed out')
      return next.done ? null : next.value
    } catch (error) {
      throw failure(error, timedOut)
    } finally {
      clearTimeout(timer)
    }
  }

  async function answerCall(call: AiContextCall<Identity>, used: string[]): Promise<unknown> {
    switch (call.method) {
      case 'generateText': {
        const request = await textRequest(call, options(call), ['prompt', 'instructions', 'attachments'], used)
        const name = await chosenModel(call, 'text')
        return await withTimeout(call.signal, async (signal) => {
          const result = await generateText({ model: provider.textModel(name), ...request, maxRetries: 0, abortSignal: signal })
          return result.text
        })
      }
      case 'generateObject': {
        const given = options(call)
        const schema = given.schema
        if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
          throw inputInvalid('ctx.ai.generateObject needs schema: a schema from @service/server')
        }
        const request = await textRequest(call, given, ['prompt', 'schema', 'attachments'], used)
        const name = await chosenModel(call, 'text')
        return await withTimeout(call.signal, async (signal) => {
          const result = await generateText({
            model: provider.textModel(name), ...request, maxRetries: 0, abortSignal: signal,
            output: Output.object({ schema: jsonSchema(schema as Parameters<typeof jsonSchema>[0]) }),
            // OpenAI's strict mode needs every property required; optional() fields turn it off.
            providerOptions: { openaiCompatible: { strictJsonSchema: fitsStrictMode(schema) } },
          })
          return result.output
        })
      }
      case 'generateImage': {
        const given = options(call)
        for (const key of Object.keys(given)) {
          if (key !== 'prompt') throw inputInvalid(`ctx.ai.generateImage takes no option "${key.slice(0, 64)}"`)
        }
        const prompt = text(given.prompt, 'prompt', true)!
        const answer: ImageAnswer = { revisedPrompt: null }
        const name = await chosenModel(call, 'image')
        const image = await withTimeout(call.signal, async (signal) => {
          const result = await generateImage({ model: provider.imageModel(answer, name), prompt, n: 1, maxRetries: 0, abortSignal: signal })
          return result.image.uint8Array
        })
        const type = await fileTypeFromBuffer(image)
        if (type?.mime !== 'image/png') {
          throw failure(new ServiceError('AI_PROVIDER_FAILED', `The AI provider answered with ${type?.mime ?? 'bytes of an unknown type'}, not a PNG image`), false)
        }
        return { data: image, contentType: 'image/png', ...(answer.revisedPrompt === null ? {} : { revisedPrompt: answer.revisedPrompt }) }
      }
      case 'streamText': {
        const request = await textRequest(call, options(call), ['prompt', 'instructions', 'attachments'], used)
        const open = openStreams(call.invocation, call.signal)
        if (open.size >= MAX_OPEN_STREAMS) {
          throw inputInvalid(`An invocation may hold at most ${MAX_OPEN_STREAMS} AI streams open; read one to its end or cancel it first`)
        }
        const model = provider.textModel(await chosenModel(call, 'text'))
        const abort = new AbortController()
        if (call.signal.aborted) abort.abort()
        else call.signal.addEventListener('abort', () => abort.abort(), { once: true })
        let failed: unknown
        const result = streamText({
          model, ...request, maxRetries: 0, abortSignal: abort.signal,
          onError: ({ error }) => {
            failed ??= error
          },
        })
        // Text pieces only; a provider failure mid-stream fails the read with its error.
        const pieces = result.fullStream.pipeThrough(new TransformStream<{ type: string; text?: string; error?: unknown }, string>({
          transform(part, controller) {
            if (part.type === 'text-delta' && typeof part.text === 'string' && part.text.length > 0) controller.enqueue(part.text)
            else if (part.type === 'error') controller.error(part.error)
          },
          flush(controller) {
            if (failed !== undefined) controller.error(failed)
          },
        }))
        const stream: OpenStream = { reader: pieces.getReader(), abort }
        // The first piece is read here, so a refused request fails this call (as a byte result fails before its first byte).
        const first = await nextPiece(stream)
        if (first === null) return { stream: null, text: '' }
        const id = randomUUID()
        open.set(id, stream)
        return { stream: id, text: first }
      }
      case 'streamText.next':
      case 'streamText.cancel': {
        const id = call.args[0]
        const open = streams.get(call.invocation)
        const stream = typeof id === 'string' ? open?.get(id) : undefined
        if (open === undefined || stream === undefined || typeof id !== 'string') {
          throw new ServiceError('AI_STREAM_NOT_FOUND', 'No open AI stream of this invocation has that id')
        }
        if (call.method === 'streamText.cancel') {
          open.delete(id)
          stream.abort.abort()
          return null
        }
        try {
          const piece = await nextPiece(stream)
          if (piece === null) open.delete(id)
          return piece
        } catch (error) {
          open.delete(id)
          stream.abort.abort()
          throw error
        }
      }
      default:
        throw new ServiceError('BAD_REQUEST', `ctx.ai has no method ${call.method.slice(0, 64)}`)
    }
  }

  return {
    async answer(call) {
      switch (call.method) {
        case 'attachment.begin':
          return staging.begin(call, call.args[0])
        case 'attachment.chunk':
          return staging.chunk(call, call.args[0], call.args[1])
        case 'attachment.release':
          staging.release(call.invocation, call.args)
          return null
      }
      const used: string[] = []
      try {
        return await answerCall(call, used)
      } finally {
        staging.release(call.invocation, used)
      }
    },
    stagedBytes: () => staging.bytes(),
  }
}

/** Whether every object in a JSON Schema requires all its properties and admits no others. */
export function fitsStrictMode(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return true
  if (Array.isArray(schema)) return schema.every(fitsStrictMode)
  const record = schema as Record<string, unknown>
  if (record.type === 'object' || record.properties !== undefined) {
    const properties = (record.properties ?? {}) as Record<string, unknown>
    const required = Array.isArray(record.required) ? record.required : []
    if (record.additionalProperties !== false) return false
    if (!Object.keys(properties).every((key) => required.includes(key))) return false
    if (!Object.values(properties).every(fitsStrictMode)) return false
  }
  for (const key of ['items', 'anyOf', 'oneOf', 'allOf', 'prefixItems']) {
    if (record[key] !== undefined && !fitsStrictMode(record[key])) return false
  }
  return true
}

function options(call: { readonly method: string; readonly args: readonly unknown[] }): Record<string, unknown> {
  const value = call.args[0]
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    throw inputInvalid(`ctx.ai.${call.method} takes an options object`)
  }
  return value as Record<string, unknown>
}

function text(value: unknown, name: string, required: boolean): string | undefined {
  if (value === undefined && !required) return undefined
  if (typeof value !== 'string' || value.trim().length === 0) throw inputInvalid(`${name} must be a nonempty string`)
  if (value.length > MAX_PROMPT_CHARS) throw inputInvalid(`${name} has ${value.length} characters; at most ${MAX_PROMPT_CHARS} are allowed`)
  return value
}

function inputInvalid(message: string): ServiceError {
  return new ServiceError('AI_INPUT_INVALID', message)
}
