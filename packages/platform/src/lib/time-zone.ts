// Decides whether a string names an IANA time zone the runtime can compute with. Used by
// the manifest validator for cron and integration-sync timezones, so a schedule that
// validates is one the scheduler can later evaluate with Intl.

let canonicalZones: ReadonlySet<string> | undefined

/**
 * True for IANA zone names such as "Europe/Berlin", "UTC", "Etc/UTC" or the legacy
 * "US/Eastern". Spelling must be exact: "europe/berlin" and UTC offsets like "+01:00"
 * are rejected even where Intl would tolerate them.
 *
 * @example
 * isValidTimeZone('Europe/Berlin') // true
 * isValidTimeZone('Mars/Olympus') // false
 */
export function isValidTimeZone(name: string): boolean {
  if (zoneList().has(name)) return true
  // Intl.supportedValuesOf lists canonical zones only; aliases such as UTC, Etc/UTC and
  // US/Eastern are IANA names too. Accept them when Intl does and every segment is
  // spelled like an IANA name (leading capital), which rules out case-folded input.
  if (!/^[A-Z][A-Za-z0-9_+-]*(\/[A-Z][A-Za-z0-9_+-]*)*$/.test(name)) return false
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name })
    return true
  } catch {
    return false
  }
}

function zoneList(): ReadonlySet<string> {
  canonicalZones ??= new Set(Intl.supportedValuesOf('timeZone'))
  return canonicalZones
}
