/** Well-formed identifiers: what a route accepts before it looks anything up or echoes it. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether `value` is a UUID in its canonical text form (what the database issues). */
export function isUuid(value: string): boolean {
  return UUID.test(value)
}

/** Whether `value` has the shape of an app slug (the host label `<slug>.<base domain>`). */
export function isAppSlug(value: string): boolean {
  return /^[a-z][a-z0-9-]{1,38}[a-z0-9]$/.test(value)
}
