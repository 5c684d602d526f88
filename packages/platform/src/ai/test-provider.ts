/**
 * A test double of an OpenAI-compatible HTTP API, in Node on loopback: it records every
 * request exactly (method, path, authorization header, JSON body) and answers from a queue
 * of scripted answers: a chat completion, a streamed one (SSE chunks, optionally held
 * after the first until the test releases them, or broken off there), an image, an error status with an
 * OpenAI-style error body, or no answer at all (for timeouts). A request with nothing
 * queued gets a 500 the test will see.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly authorization: string | undefined
  readonly body: any
}

export type ScriptedAnswer =
  | { readonly kind: 'chat'; readonly content: string }
  | { readonly kind: 'stream'; readonly pieces: readonly string[]; readonly holdAfterFirst?: boolean; readonly breakAfterFirst?: boolean }
  | { readonly kind: 'image'; readonly b64: string; readonly revisedPrompt?: string }
  | { readonly kind: 'status'; readonly status: number; readonly message: string }
  | { readonly kind: 'hang' }

export interface ProviderDouble {
  readonly baseUrl: string
  readonly requests: RecordedRequest[]
  /** Queues the answers to the next requests, in order. */
  answer(...answers: ScriptedAnswer[]): void
  /** Sends the rest of a stream held after its first piece. */
  release(): void
  /** Held streams whose connection the platform closed before they were released. */
  abandoned(): number
  close(): Promise<void>
}

const MODEL_CREATED = 1_764_000_000

export async function startProviderDouble(): Promise<ProviderDouble> {
  const requests: RecordedRequest[] = []
  const queue: ScriptedAnswer[] = []
  const held: Array<() => void> = []
  const hanging = new Set<ServerResponse>()
  let abandoned = 0

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const piece of req) chunks.push(piece as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    requests.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization, body: text ? JSON.parse(text) : null })
    const answer = queue.shift()
    if (answer === undefined) return json(res, 500, { error: { message: 'the test queued no answer for this request' } })
    switch (answer.kind) {
      case 'chat':
        return json(res, 200, {
          id: 'chatcmpl-test', object: 'chat.completion', created: MODEL_CREATED, model: 'test-model',
          choices: [{ index: 0, message: { role: 'assistant', content: answer.content }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        })
      case 'stream': {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
        const event = (delta: object, finish: string | null) =>
          `data: ${JSON.stringify({ id: 'chatcmpl-test', object: 'chat.completion.chunk', created: MODEL_CREATED, model: 'test-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
        const [first, ...rest] = answer.pieces
        res.write(event({ role: 'assistant', content: first ?? '' }, null))
        const finish = () => {
          for (const piece of rest) res.write(event({ content: piece }, null))
          res.write(event({}, 'stop'))
          res.end('data: [DONE]\n\n')
        }
        if (answer.breakAfterFirst) {
          // The connection breaks when the test releases it, after the first piece arrived.
          held.push(() => res.socket?.destroy())
          return
        }
        if (answer.holdAfterFirst) {
          let released = false
          res.on('close', () => {
            if (!released) abandoned += 1
          })
          held.push(() => {
            released = true
            if (!res.destroyed) finish()
          })
        } else {
          finish()
        }
        return
      }
      case 'image':
        return json(res, 200, { created: MODEL_CREATED, data: [{ b64_json: answer.b64, ...(answer.revisedPrompt ? { revised_prompt: answer.revisedPrompt } : {}) }] })
      case 'status':
        return json(res, answer.status, { error: { message: answer.message, type: 'test_error', code: null } })
      case 'hang':
        hanging.add(res)
        return
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.statusCode = 500
      res.end(String(error))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    answer: (...answers) => queue.push(...answers),
    release() {
      for (const finish of held.splice(0)) finish()
    },
    abandoned: () => abandoned,
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}
