/**
 * Waiting for work in flight at shutdown, for at most a grace period: the jobs dispatcher, the
 * event delivery worker and the sync scheduler stop this way (what still runs after it ends
 * with the Functions host, or is left to its lease).
 */

/**
 * Resolves when every promise has settled or `graceMs` has passed, whichever comes first.
 *
 * @example
 * await settledWithin([...inFlight], 20_000)
 */
export async function settledWithin(promises: readonly Promise<unknown>[], graceMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([
    Promise.allSettled(promises),
    new Promise((resolve) => (timer = setTimeout(resolve, graceMs))),
  ])
  clearTimeout(timer)
}
