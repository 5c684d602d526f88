/** The part of autocannon's API this benchmark uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  export interface AutocannonRequest {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string
    /** Called before every request; returns the request to send. */
    setupRequest?: (request: AutocannonRequest) => AutocannonRequest
  }

  export interface AutocannonOptions {
    url: string
    connections?: number
    /** Seconds. */
    duration?: number
    /** A fixed number of requests instead of a duration. */
    amount?: number
    pipelining?: number
    /** Seconds before a request counts as timed out. */
    timeout?: number
    method?: string
    headers?: Record<string, string>
    body?: string
    requests?: AutocannonRequest[]
  }

  export interface AutocannonResult {
    errors: number
    timeouts: number
    non2xx: number
    duration: number
    statusCodeStats: Record<string, { count: number }>
  }

  /** An event emitter (`response`: client, status, bytes, milliseconds) that is also a promise of the result. */
  export interface AutocannonInstance extends EventEmitter, PromiseLike<AutocannonResult> {
    stop(): void
  }

  export default function autocannon(options: AutocannonOptions): AutocannonInstance
}
