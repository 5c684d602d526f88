/**
 * The sandbox a Functions worker runs in: the `deno run` arguments and environment.
 *
 * Permissions: read the app bundle and the SDK directory only; no write, env, run, FFI or
 * sys; the network is open except for denied addresses. Checked against Deno 2.9.6:
 *
 * - `--deny-net` takes IPv4 addresses, IPv4 CIDR ranges (`10.0.0.0/8`), host names,
 *   `host:port`, and IPv6 addresses in brackets (`[::1]`, `[fe80::1]:80`). It does NOT
 *   take IPv6 ranges: `fe80::/10` fails ("ipv6 addresses must be enclosed in square
 *   brackets") and `[fe80::]/10`, `[fe80::/10]` fail as invalid hosts. So link-local
 *   (fe80::/10) and unique-local (fc00::/7) IPv6 cannot be denied as ranges; we deny the
 *   host's own IPv6 addresses exactly and record the gap.
 * - Deno checks the URL's host and, at connect time, every resolved address. A host name
 *   that resolves to a denied address (`localhost`) is refused at connect
 *   (`TypeError: fetch failed`, cause "Requires net access to 127.0.0.1:..."), and
 *   IPv4-mapped IPv6 literals (`[::ffff:127.0.0.1]`) are checked as their IPv4 address.
 * - The connect-time check ignores allow entries: a denied address stays denied even when
 *   `--allow-net=127.0.0.1:8080` names it. Tests that need a loopback server therefore
 *   carve the address out of the denied ranges (`allowNet`); the whole address opens,
 *   whatever port the entry names, except ports denied explicitly (`127.0.0.1:4000`).
 * - A denied address also refuses `Deno.listen` on it, and `0.0.0.0/8` and `[::]`
 *   refuse listening on every interface; the host's own addresses are denied too.
 *
 * The import map is a `data:` URL, so nothing is written to start a worker.
 */
import { networkInterfaces } from 'node:os'
import { dirname } from 'node:path'
import { pathToFileURL } from 'node:url'

/**
 * IPv4 ranges no Function may reach: "this network", private (RFC 1918), carrier-grade
 * NAT (RFC 6598, used inside clouds and VPNs), loopback and link-local (cloud metadata).
 */
export const DENIED_IPV4_RANGES: readonly string[] = Object.freeze([
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.168.0.0/16',
])

/** IPv6 addresses denied exactly (Deno takes no IPv6 ranges): loopback and unspecified. */
export const DENIED_IPV6_ADDRESSES: readonly string[] = Object.freeze(['[::1]', '[::]'])

export interface NetworkPolicy {
  /** Extra addresses to refuse, such as the platform's own `host:port` or host name. */
  readonly denyNet?: readonly string[]
  /**
   * IPv4 or bracketed IPv6 addresses, or IPv4 CIDR ranges, to carve out of the denied
   * ranges (tests on loopback). A `:port` is accepted but does not narrow the opening.
   */
  readonly allowNet?: readonly string[]
  /** The host's own addresses; `networkInterfaces()` when left out. */
  readonly localAddresses?: readonly string[]
}

/**
 * The `--deny-net` list for a worker: the fixed ranges minus `allowNet`, the host's own
 * addresses, and `denyNet`.
 *
 * @example
 * deniedNetwork({ allowNet: ['127.0.0.1'], localAddresses: [] })
 * // ['0.0.0.0/8', ..., '127.0.0.0', '127.0.0.2/31', ..., '[::1]', '[::]']
 */
export function deniedNetwork(policy: NetworkPolicy): string[] {
  const openings = (policy.allowNet ?? []).map(parseOpening)
  const v4Openings = openings.flatMap((opening) => (opening.family === 4 ? [opening.range] : []))
  const v6Openings = new Set(openings.flatMap((opening) => (opening.family === 6 ? [opening.address] : [])))

  const denied: string[] = []
  for (const text of DENIED_IPV4_RANGES) {
    let pieces = [parseIpv4Range(text)]
    for (const opening of v4Openings) pieces = pieces.flatMap((piece) => subtractRange(piece, opening))
    denied.push(...pieces.map(formatIpv4Range))
  }
  const coveredV4 = (address: number) => denied.some((entry) => {
    if (entry.includes('[') || !/^[\d./]+$/.test(entry)) return false
    return contains(parseIpv4Range(entry), address)
  })
  for (const address of DENIED_IPV6_ADDRESSES) if (!v6Openings.has(normalizeIpv6(address.slice(1, -1)))) denied.push(address)

  for (const address of policy.localAddresses ?? hostAddresses()) {
    if (address.includes(':')) {
      const normalized = normalizeIpv6(address.replace(/%.*$/, ''))
      const entry = `[${normalized}]`
      if (!v6Openings.has(normalized) && !denied.includes(entry)) denied.push(entry)
    } else {
      const value = parseIpv4(address)
      if (!coveredV4(value) && !v4Openings.some((opening) => contains(opening, value))) denied.push(address)
    }
  }
  for (const entry of policy.denyNet ?? []) if (!denied.includes(entry)) denied.push(entry)
  return denied
}

/** Every address of this host's network interfaces (IPv6 without its zone). */
function hostAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((entries) => (entries ?? []).map((entry) => entry.address))
}

export interface WorkerCommandOptions extends NetworkPolicy {
  /** The real path of the app bundle directory; the worker's cwd and its only readable data. */
  readonly bundleDir: string
  /** The real path of `@service/server`'s entry file (packages/server-sdk/src/index.ts). */
  readonly sdkEntry: string
  /** The real path of worker/worker.ts. */
  readonly workerScript: string
  /** Deno's cache directory (transpiled modules, V8 code cache). */
  readonly denoDir: string
  /** A V8 heap limit for the worker; a Function that exceeds it crashes its worker. */
  readonly maxHeapMb?: number
}

/**
 * The arguments and environment of `deno` for one worker.
 *
 * @example
 * const { args, env } = workerCommand({ bundleDir, sdkEntry, workerScript, denoDir })
 * spawn(resolveDenoBinary(), args, { cwd: bundleDir, env })
 */
export function workerCommand(options: WorkerCommandOptions): { args: string[]; env: Record<string, string> } {
  const sdkDir = dirname(options.sdkEntry)
  for (const path of [options.bundleDir, sdkDir]) {
    // Deno splits permission lists on commas.
    if (path.includes(',')) throw new TypeError(`the path ${path} contains a comma, which Deno permission lists cannot hold`)
  }
  const importMap = { imports: { '@service/server': pathToFileURL(options.sdkEntry).href } }
  const args = [
    'run',
    '--no-prompt',
    '--no-remote',
    '--no-npm',
    '--no-config',
    '--no-lock',
    `--import-map=data:application/json,${encodeURIComponent(JSON.stringify(importMap))}`,
    `--allow-read=${options.bundleDir},${sdkDir}`,
    '--allow-net',
    `--deny-net=${deniedNetwork(options).join(',')}`,
  ]
  if (options.maxHeapMb !== undefined) args.push(`--v8-flags=--max-old-space-size=${Math.floor(options.maxHeapMb)}`)
  args.push(options.workerScript, bundleUrl(options.bundleDir))
  return {
    args,
    env: { DENO_DIR: options.denoDir, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' },
  }
}

/** The bundle directory as a file URL ending in `/`, which the worker resolves entrypoints against. */
export function bundleUrl(bundleDir: string): string {
  const href = pathToFileURL(bundleDir).href
  return href.endsWith('/') ? href : `${href}/`
}

// ---- Addresses ----

interface Ipv4Range {
  /** The first address, as an unsigned 32-bit number. */
  readonly base: number
  readonly prefix: number
}

type Opening = { readonly family: 4; readonly range: Ipv4Range } | { readonly family: 6; readonly address: string }

function parseOpening(entry: string): Opening {
  if (entry.startsWith('[')) {
    const end = entry.indexOf(']')
    if (end === -1) throw new TypeError(`allowNet entry ${entry} has no closing bracket`)
    return { family: 6, address: normalizeIpv6(entry.slice(1, end)) }
  }
  const host = entry.replace(/:\d+$/, '')
  if (!/^\d{1,3}(\.\d{1,3}){3}(\/\d{1,2})?$/.test(host)) {
    throw new TypeError(
      `allowNet entry ${entry} must be an IP address or an IPv4 CIDR range: Deno checks the resolved address, so a host name cannot be opened`,
    )
  }
  return { family: 4, range: parseIpv4Range(host) }
}

function normalizeIpv6(address: string): string {
  return new URL(`http://[${address}]/`).hostname.slice(1, -1)
}

function parseIpv4(text: string): number {
  const parts = text.split('.').map(Number)
  if (parts.length !== 4 || parts.some((part) => !Number.isInteger(part) || part < 0 || part > 255)) {
    throw new TypeError(`${text} is not an IPv4 address`)
  }
  return parts.reduce((value, part) => value * 256 + part, 0)
}

function parseIpv4Range(text: string): Ipv4Range {
  const [address = '', prefixText] = text.split('/')
  const prefix = prefixText === undefined ? 32 : Number(prefixText)
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > 32) throw new TypeError(`${text} has an invalid prefix length`)
  const size = 2 ** (32 - prefix)
  return { base: Math.floor(parseIpv4(address) / size) * size, prefix }
}

function formatIpv4Range(range: Ipv4Range): string {
  const octets = [24, 16, 8, 0].map((shift) => Math.floor(range.base / 2 ** shift) % 256)
  return range.prefix === 32 ? octets.join('.') : `${octets.join('.')}/${range.prefix}`
}

function rangeSize(range: Ipv4Range): number {
  return 2 ** (32 - range.prefix)
}

function contains(range: Ipv4Range, address: number): boolean {
  return address >= range.base && address < range.base + rangeSize(range)
}

/** `range` without `hole`, as the fewest CIDR ranges. */
function subtractRange(range: Ipv4Range, hole: Ipv4Range): Ipv4Range[] {
  const rangeEnd = range.base + rangeSize(range)
  const holeEnd = hole.base + rangeSize(hole)
  if (holeEnd <= range.base || hole.base >= rangeEnd) return [range]
  if (hole.base <= range.base && holeEnd >= rangeEnd) return []
  const half = rangeSize(range) / 2
  const lower = { base: range.base, prefix: range.prefix + 1 }
  const upper = { base: range.base + half, prefix: range.prefix + 1 }
  return [...subtractRange(lower, hole), ...subtractRange(upper, hole)]
}
