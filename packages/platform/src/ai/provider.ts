/**
 * The AI provider: any OpenAI-compatible HTTP API (OpenAI, Ollama, llama.cpp's server,
 * vLLM, ...) through the AI SDK's `@ai-sdk/openai-compatible`, configured by AI_BASE_URL,
 * AI_API_KEY, AI_TEXT_MODEL and AI_IMAGE_MODEL. Only the platform holds the key; the Deno
 * worker asks the platform (functions/host.ts `case 'ai'`). Also here: how the provider's
 * failures become ServiceErrors (429, 5xx, network failures and timeouts retryable as
 * AI_PROVIDER_UNAVAILABLE, 503; other answers AI_PROVIDER_FAILED, 502), with the key
 * removed from any text that leaves this module.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { APICallError, NoImageGeneratedError, NoObjectGeneratedError, NoOutputGeneratedError, type ImageModel, type LanguageModel } from 'ai'
import type { AiSettings } from '../config.ts'
import { ServiceError } from '../lib/errors.ts'

/** A settings value a call needs and the environment variable that sets it. */
const SETTING_NAMES = { baseUrl: 'AI_BASE_URL', textModel: 'AI_TEXT_MODEL', imageModel: 'AI_IMAGE_MODEL' } as const

/** What an image request's answer said besides the image (the AI SDK keeps only the bytes). */
export interface ImageAnswer {
  revisedPrompt: string | null
}

export interface AiProvider {
  /** The text model `name` (null: AI_TEXT_MODEL), or AI_NOT_CONFIGURED naming the missing setting. */
  textModel(name: string | null): LanguageModel
  /** The image model `name` (null: AI_IMAGE_MODEL), whose answers' `revised_prompt` lands in `answer`. */
  imageModel(answer: ImageAnswer, name: string | null): ImageModel
  /** Removes the API key from a text. */
  redact(text: string): string
}

export function createAiProvider(settings: AiSettings): AiProvider {
  const redact = (text: string) => (settings.apiKey ? text.split(settings.apiKey).join('[REDACTED]') : text)
  function provider(fetchImpl?: typeof fetch) {
    const baseURL = required(settings, 'baseUrl')
    return createOpenAICompatible({
      name: 'ai',
      baseURL,
      ...(settings.apiKey ? { apiKey: settings.apiKey } : {}),
      supportsStructuredOutputs: true,
      transformRequestBody: moveImageDetail,
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
    })
  }
  return {
    textModel: (name) => provider().chatModel(name ?? required(settings, 'textModel')),
    imageModel(answer, name) {
      required(settings, 'baseUrl')
      const model = name ?? required(settings, 'imageModel')
      // The AI SDK's image answer schema drops `revised_prompt`; read it from a copy of the answer.
      const capture: typeof fetch = async (input, init) => {
        const response = await fetch(input, init)
        if (response.ok) {
          try {
            const body = (await response.clone().json()) as { data?: Array<{ revised_prompt?: unknown }> }
            const revised = body.data?.[0]?.revised_prompt
            if (typeof revised === 'string' && revised.length > 0) answer.revisedPrompt = revised
          } catch {
            // Not JSON: the AI SDK reports that itself.
          }
        }
        return response
      }
      return provider(capture).imageModel(model)
    },
    redact,
  }
}

function required(settings: AiSettings, name: keyof typeof SETTING_NAMES): string {
  const value = settings[name]
  if (value === null) {
    const variable = SETTING_NAMES[name]
    throw new ServiceError('AI_NOT_CONFIGURED', `ctx.ai needs ${variable}: the platform operator sets it (docs/operations.md, AI provider)`, {
      details: { setting: variable },
    })
  }
  return value
}

/**
 * OpenAI's chat format puts an image's `detail` inside `image_url`; the AI SDK puts a part's
 * provider options beside it. Moves it in, so `detail: 'original'` reaches the provider.
 */
function moveImageDetail(body: Record<string, any>): Record<string, any> {
  const messages = body.messages
  if (!Array.isArray(messages)) return body
  for (const message of messages) {
    if (!Array.isArray(message?.content)) continue
    for (const part of message.content) {
      if (part?.type === 'image_url' && part.detail !== undefined) {
        part.image_url = { ...part.image_url, detail: part.detail }
        delete part.detail
      }
    }
  }
  return body
}

/**
 * Turns anything a provider call threw into a ServiceError; `timedOut` when the platform's
 * own timeout aborted it.
 */
export function providerError(thrown: unknown, options: { timedOut: boolean; timeoutMs: number; redact: (text: string) => string }): ServiceError {
  if (thrown instanceof ServiceError) return thrown
  if (options.timedOut) {
    return new ServiceError('AI_PROVIDER_UNAVAILABLE', `The AI provider did not answer within ${options.timeoutMs} ms; try again`, {
      details: { reason: 'timeout', timeoutMs: options.timeoutMs },
    })
  }
  const apiError = findApiError(thrown)
  if (apiError !== undefined) {
    const status = apiError.statusCode
    const said = options.redact(providerMessage(apiError.responseBody)).slice(0, 300)
    if (status !== undefined && status < 300) {
      // The answer started and then broke off (the connection closed mid-stream).
      return new ServiceError('AI_PROVIDER_UNAVAILABLE', "The AI provider's answer broke off; try again", { details: { reason: 'network' } })
    }
    if (status === undefined || status === 408 || status === 429 || status >= 500) {
      return new ServiceError('AI_PROVIDER_UNAVAILABLE', `The AI provider is unavailable${status ? ` (HTTP ${status})` : ''}; try again${said ? `: ${said}` : ''}`, {
        details: status ? { status } : { reason: 'network' },
      })
    }
    return new ServiceError('AI_PROVIDER_FAILED', `The AI provider refused the request (HTTP ${status})${said ? `: ${said}` : ''}`, { details: { status } })
  }
  if (NoObjectGeneratedError.isInstance(thrown) || NoOutputGeneratedError.isInstance(thrown)) {
    return new ServiceError('AI_OUTPUT_INVALID', 'The AI model did not answer with a JSON object', {})
  }
  if (NoImageGeneratedError.isInstance(thrown)) {
    return new ServiceError('AI_PROVIDER_FAILED', 'The AI provider answered without an image', {})
  }
  if (isNetworkFailure(thrown)) {
    return new ServiceError('AI_PROVIDER_UNAVAILABLE', 'The AI provider could not be reached; try again', { details: { reason: 'network' } })
  }
  // An answer the AI SDK could not read (invalid JSON, unexpected shape): not retryable.
  return new ServiceError('AI_PROVIDER_FAILED', 'The AI provider gave an answer that could not be read', {})
}

function findApiError(thrown: unknown): APICallError | undefined {
  let current: unknown = thrown
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth += 1) {
    if (APICallError.isInstance(current)) return current
    const record = current as { lastError?: unknown; cause?: unknown }
    current = record.lastError ?? record.cause
  }
  return undefined
}

function isNetworkFailure(thrown: unknown): boolean {
  let current: unknown = thrown
  for (let depth = 0; depth < 5 && current instanceof Error; depth += 1) {
    if (current instanceof TypeError && /fetch failed/i.test(current.message)) return true
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'ENOTFOUND'].includes(code)) return true
    current = current.cause
  }
  return false
}

/** The `error.message` of an OpenAI-style error body, else nothing (bodies are not shown whole). */
function providerMessage(body: string | undefined): string {
  if (body === undefined) return ''
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string }
    const message = typeof parsed.error === 'string' ? parsed.error : parsed.error?.message
    return typeof message === 'string' ? message : ''
  } catch {
    return ''
  }
}
