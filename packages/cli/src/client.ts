/**
 * The CLI's client for the owner API: the base URL main.ts chose (platform-url.ts) and the
 * owner token (SERVICE_TOKEN or the stored one). Errors from the platform come back as
 * ApiError with the platform's code.
 */
export class ApiError extends Error {
  override name = 'ApiError'
  readonly status: number
  readonly code: string
  readonly details: unknown
  constructor(status: number, code: string, message: string, details?: unknown) {
    super(message)
    this.status = status
    this.code = code
    this.details = details
  }
}

export interface ClientOptions {
  baseUrl: string
  token?: string | undefined
}

export function createClient(options: ClientOptions) {
  async function call<T>(method: string, path: string, body?: unknown, token = options.token): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' }
    if (token) headers.authorization = `Bearer ${token}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    let res: Response
    try {
      res = await fetch(new URL(path, options.baseUrl), {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      })
    } catch (error) {
      throw new ApiError(0, 'PLATFORM_UNREACHABLE',
        `cannot reach the platform at ${options.baseUrl} (${(error as Error).cause ?? (error as Error).message}); is it running?`)
    }
    const text = await res.text()
    let json: any = null
    try {
      json = text ? JSON.parse(text) : null
    } catch {
      throw new ApiError(res.status, 'BAD_RESPONSE', `the platform answered ${res.status} with a body that is not JSON`)
    }
    if (!res.ok) {
      const error = json?.error ?? {}
      throw new ApiError(res.status, error.code ?? 'HTTP_ERROR', error.message ?? `HTTP ${res.status}`, error.details)
    }
    return json as T
  }
  return { call, baseUrl: options.baseUrl }
}

export type Client = ReturnType<typeof createClient>
