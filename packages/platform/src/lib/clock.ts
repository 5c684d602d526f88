/**
 * Time as a dependency. Sessions, tokens, jobs and cron read the clock through this
 * interface so tests can cross 15 minutes or 30 days in a millisecond.
 */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  #ms: number
  constructor(start: Date | string = '2026-01-01T00:00:00Z') {
    this.#ms = new Date(start).getTime()
  }
  now(): Date {
    return new Date(this.#ms)
  }
  advance(ms: number): void {
    this.#ms += ms
  }
  set(at: Date | string): void {
    this.#ms = new Date(at).getTime()
  }
}
