// Runtime SDK versions: which versions a manifest may pin, and the minimum version each
// version-gated feature needs (spec section 9). Versions are plain x.y.z; pre-release and
// build suffixes are not accepted, because the pinned version selects a published SDK.

/** The newest @service/server version this platform runs. */
export const PLATFORM_SDK_VERSION = '2.6.0'

/** The oldest SDK version a schema-3 manifest may pin. */
export const MINIMUM_SDK_VERSION = '2.0.0'

/** The first SDK version that supports each gated feature. */
export const SDK_GATES = {
  integrationSlots: '2.2.0',
  functionRoutes: '2.3.0',
  fileGrants: '2.4.0',
  dataSearch: '2.4.0',
  providerSyncWebhookEvents: '2.6.0',
} as const

export type SdkGate = keyof typeof SDK_GATES

type SdkVersion = readonly [major: number, minor: number, patch: number]

const VERSION_PATTERN = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/

/** Parses "x.y.z" (no leading zeros, no suffixes); null when malformed. */
export function parseSdkVersion(text: string): SdkVersion | null {
  const match = VERSION_PATTERN.exec(text)
  if (match === null) return null
  return [Number(match[1]), Number(match[2]), Number(match[3])]
}

/**
 * True when `version` is the same as or newer than `minimum`. A malformed version is
 * never "at least" anything.
 *
 * @example
 * sdkAtLeast('2.3.0', SDK_GATES.functionRoutes) // true
 * sdkAtLeast('2.10.0', '2.9.1') // true (numeric, not lexical)
 */
export function sdkAtLeast(version: string, minimum: string): boolean {
  const have = parseSdkVersion(version)
  const need = parseSdkVersion(minimum)
  if (have === null || need === null) return false
  return compareSdkVersions(have, need) >= 0
}

function compareSdkVersions(a: SdkVersion, b: SdkVersion): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2]
}
