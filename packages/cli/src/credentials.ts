/**
 * Where the CLI keeps its own owner API token, one per platform origin (spec 4.5: "the CLI
 * keeps account and app credentials in the protected OS credential backend").
 *
 * - The OS credential store through `@napi-rs/keyring` (keyring-rs): the macOS Keychain,
 *   Windows Credential Manager, and on Linux and FreeBSD the Secret Service (GNOME Keyring,
 *   KWallet, KeePassXC) over D-Bus. Linux is pinned to the Secret Service: the binding's
 *   other Linux store, the kernel keyring, forgets everything at reboot.
 * - Where no OS store answers (a headless server or container with no session bus, a
 *   platform without a prebuilt binding), a file: `$XDG_CONFIG_HOME/service/credentials.json`
 *   (default `~/.config`), mode 0600 in a 0700 directory. `fallback` and `fallbackReason`
 *   say so, and `service login` repeats it on stderr.
 *
 * `SERVICE_CREDENTIALS_FILE` forces the file backend at that path (tests, containers).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { randomBytes } from 'node:crypto'

export interface CredentialStore {
  readonly kind: 'os' | 'file'
  /** Where the tokens are, for messages: the file's path or the OS store's name. */
  readonly location: string
  /** True when the file was chosen because no OS credential store answered. */
  readonly fallback: boolean
  /** Why no OS store answered, when `fallback`. */
  readonly fallbackReason?: string
  get(baseUrl: string): Promise<string | null>
  set(baseUrl: string, token: string): Promise<void>
  /** Removes the stored token; false when there was none. */
  clear(baseUrl: string): Promise<boolean>
}

/**
 * One OS credential store: secrets by account name under the CLI's service name. Each call
 * may be cancelled by `signal` (a store waiting on an unlock prompt nobody answers).
 */
export interface KeyringBackend {
  /** For messages: `the macOS Keychain`. */
  readonly name: string
  get(account: string, signal: AbortSignal): Promise<string | null>
  set(account: string, secret: string, signal: AbortSignal): Promise<void>
  /** False when nothing was stored. */
  delete(account: string, signal: AbortSignal): Promise<boolean>
}

/** Opens the OS store, or throws saying why there is none. */
export type OpenKeyring = () => Promise<KeyringBackend>

export interface CredentialStoreOptions {
  env: Record<string, string | undefined>
  /** The OS store to try; default `@napi-rs/keyring` (tests pass their own). */
  openKeyring?: OpenKeyring
  /** How long one OS store call may take before the store counts as not answering. */
  timeoutMs?: number
}

/** The service name the tokens are filed under in the OS store. */
export const KEYRING_SERVICE = 'service-platform'

/** The key a credential is stored under: the base URL's origin (`http://localhost:8787`). */
export function credentialKey(baseUrl: string): string {
  return new URL(baseUrl).origin
}

/**
 * The store to use: the file when SERVICE_CREDENTIALS_FILE is set, else the OS store when
 * one answers a lookup, else the default file (marked as a fallback, with the reason).
 *
 * @example
 *   const store = await openCredentialStore({ env: process.env })
 *   const token = await store.get('http://localhost:8787')
 */
export async function openCredentialStore(options: CredentialStoreOptions): Promise<CredentialStore> {
  const forced = options.env.SERVICE_CREDENTIALS_FILE
  if (forced) return fileStore(forced, { fallback: false })
  const timeoutMs = options.timeoutMs ?? 10_000
  const configHome = options.env.XDG_CONFIG_HOME || join(options.env.HOME || homedir(), '.config')
  const file = join(configHome, 'service', 'credentials.json')
  let keyring: KeyringBackend
  try {
    keyring = await (options.openKeyring ?? openNapiKeyring)()
    // A lookup that answers (found or not) is a working store; one that fails or hangs is not.
    await withTimeout(timeoutMs, (signal) => keyring.get(`${KEYRING_SERVICE}-availability-check`, signal))
  } catch (error) {
    return fileStore(file, { fallback: true, reason: reasonOf(error) })
  }
  return keyringStore(keyring, timeoutMs)
}

/**
 * Runs `run` with a signal that aborts after `ms`. Not AbortSignal.timeout: its timer does
 * not keep the process alive, so a store that never answers left nothing to wait for and
 * the command ended with its promise unsettled.
 */
async function withTimeout<T>(ms: number, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')), ms)
  try {
    return await run(controller.signal)
  } finally {
    clearTimeout(timer)
  }
}

function reasonOf(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'it did not answer in time'
  return error instanceof Error ? error.message : String(error)
}

/** The names people know the OS stores by, per `process.platform`. */
function keyringName(platform: string): string {
  if (platform === 'darwin') return 'the macOS Keychain'
  if (platform === 'win32') return 'Windows Credential Manager'
  return 'the Secret Service (GNOME Keyring, KWallet, KeePassXC)'
}

/** The OS store through @napi-rs/keyring; throws when the binding or the store is missing. */
const openNapiKeyring: OpenKeyring = async () => {
  let binding: typeof import('@napi-rs/keyring')
  try {
    binding = await import('@napi-rs/keyring')
  } catch (error) {
    throw new Error(`no prebuilt @napi-rs/keyring for ${process.platform}-${process.arch} (${(error as Error).message})`, { cause: error })
  }
  // Pinned on Linux: without a Secret Service the constructor throws instead of silently
  // choosing the kernel keyring, which loses the token at reboot.
  const entryOptions = process.platform === 'linux' ? { linux: { store: 'secret-service' as const } } : undefined
  const entry = (account: string) => new binding.AsyncEntry(KEYRING_SERVICE, account, entryOptions)
  entry(`${KEYRING_SERVICE}-availability-check`)
  return {
    name: keyringName(process.platform),
    get: (account, signal) => entry(account).getPassword(signal),
    set: (account, secret, signal) => entry(account).setPassword(secret, signal),
    delete: (account, signal) => entry(account).deleteCredential(signal),
  }
}

function keyringStore(keyring: KeyringBackend, timeoutMs: number): CredentialStore {
  const failed = (what: string, error: unknown) =>
    new Error(`${keyring.name} failed to ${what} (${reasonOf(error)}); set SERVICE_CREDENTIALS_FILE to keep the token in a file instead`, { cause: error })
  const call = async <T>(what: string, run: (signal: AbortSignal) => Promise<T>): Promise<T> => {
    try {
      return await withTimeout(timeoutMs, run)
    } catch (error) {
      throw failed(what, error)
    }
  }
  return {
    kind: 'os',
    location: keyring.name,
    fallback: false,
    get: (baseUrl) => call('look up the token', (signal) => keyring.get(credentialKey(baseUrl), signal)),
    set: (baseUrl, token) => call('store the token', (signal) => keyring.set(credentialKey(baseUrl), token, signal)),
    clear: (baseUrl) => call('remove the token', (signal) => keyring.delete(credentialKey(baseUrl), signal)),
  }
}

interface CredentialsFile {
  version: 1
  credentials: Record<string, { token: string; savedAt: string }>
}

function fileStore(path: string, options: { fallback: boolean; reason?: string }): CredentialStore {
  const read = (): CredentialsFile => {
    if (!existsSync(path)) return { version: 1, credentials: {} }
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<CredentialsFile>
    return { version: 1, credentials: parsed.credentials ?? {} }
  }
  const write = (data: CredentialsFile) => {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
    // Written beside the target with 0600 from the start, then renamed over it: no moment
    // where the token sits in a file others can read, and no half-written file.
    const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`
    try {
      writeFileSync(tmp, JSON.stringify(data, null, 2) + '\n', { mode: 0o600, flag: 'wx' })
      chmodSync(tmp, 0o600)
      renameSync(tmp, path)
    } finally {
      rmSync(tmp, { force: true })
    }
  }
  return {
    kind: 'file',
    location: path,
    fallback: options.fallback,
    ...(options.reason === undefined ? {} : { fallbackReason: options.reason }),
    async get(baseUrl) {
      return read().credentials[credentialKey(baseUrl)]?.token ?? null
    },
    async set(baseUrl, token) {
      const data = read()
      data.credentials[credentialKey(baseUrl)] = { token, savedAt: new Date().toISOString() }
      write(data)
    },
    async clear(baseUrl) {
      const data = read()
      const key = credentialKey(baseUrl)
      if (!data.credentials[key]) return false
      delete data.credentials[key]
      write(data)
      return true
    },
  }
}
