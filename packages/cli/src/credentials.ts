/**
 * Where the CLI keeps its own owner API token, one per platform base URL (spec 4.5: "the
 * CLI keeps account and app credentials in the protected OS credential backend").
 *
 * - The OS credential store through libsecret's `secret-tool` (GNOME Keyring, KWallet via
 *   the Secret Service API), when the command exists and answers. The token goes over
 *   stdin, never on a command line where `ps` would show it.
 * - Otherwise a file, `$XDG_CONFIG_HOME/service/credentials.json` (default `~/.config`),
 *   mode 0600 in a 0700 directory; `fallback` is set so the CLI can warn that no OS
 *   credential store was found.
 *
 * `SERVICE_CREDENTIALS_FILE` forces the file backend at that path (tests, containers).
 */
import { spawn } from 'node:child_process'
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
  get(baseUrl: string): Promise<string | null>
  set(baseUrl: string, token: string): Promise<void>
  /** Removes the stored token; false when there was none. */
  clear(baseUrl: string): Promise<boolean>
}

export interface CredentialStoreOptions {
  env: Record<string, string | undefined>
  /** The `secret-tool` command to run (tests pass a stand-in). */
  secretTool?: string
  /** How long one `secret-tool` call may take before the store counts as unavailable. */
  timeoutMs?: number
}

/** The key a credential is stored under: the base URL's origin (`http://localhost:8787`). */
export function credentialKey(baseUrl: string): string {
  return new URL(baseUrl).origin
}

/**
 * The store to use: the file when SERVICE_CREDENTIALS_FILE is set, else the OS store when
 * `secret-tool` works, else the default file.
 *
 * @example
 *   const store = await openCredentialStore({ env: process.env })
 *   const token = await store.get('http://localhost:8787')
 */
export async function openCredentialStore(options: CredentialStoreOptions): Promise<CredentialStore> {
  const forced = options.env.SERVICE_CREDENTIALS_FILE
  if (forced) return fileStore(forced, false)
  const tool = secretToolStore(options.secretTool ?? 'secret-tool', options.timeoutMs ?? 10_000)
  if (await tool.available()) return tool.store
  const configHome = options.env.XDG_CONFIG_HOME || join(options.env.HOME || homedir(), '.config')
  return fileStore(join(configHome, 'service', 'credentials.json'), true)
}

interface RunResult {
  code: number | null
  stdout: string
  stderr: string
}

function run(command: string, args: string[], input: string, timeoutMs: number): Promise<RunResult | null> {
  return new Promise((resolve) => {
    let child
    try {
      child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: timeoutMs })
    } catch {
      resolve(null)
      return
    }
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    // ENOENT (no secret-tool) and other spawn failures mean "no OS store".
    child.on('error', () => resolve(null))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.on('error', () => {})
    child.stdin.end(input)
  })
}

const ATTRIBUTES = (baseUrl: string) => ['service', 'service-platform', 'url', credentialKey(baseUrl)]

function secretToolStore(command: string, timeoutMs: number) {
  const fail = (what: string, result: RunResult | null) =>
    new Error(`the OS credential store (secret-tool) failed to ${what}${result?.stderr ? `: ${result.stderr.trim()}` : ''}`)
  const lookup = (baseUrl: string) => run(command, ['lookup', ...ATTRIBUTES(baseUrl)], '', timeoutMs)
  const store: CredentialStore = {
    kind: 'os',
    location: 'the OS credential store (libsecret)',
    fallback: false,
    async get(baseUrl) {
      const result = await lookup(baseUrl)
      if (result?.code === 0) return result.stdout.trim() || null
      // secret-tool exits 1 without a message when nothing is stored under the attributes.
      if (result?.code === 1 && result.stderr.trim() === '') return null
      throw fail('look up the token', result)
    },
    async set(baseUrl, token) {
      const result = await run(command, ['store', '--label=service CLI', ...ATTRIBUTES(baseUrl)], token, timeoutMs)
      if (result?.code !== 0) throw fail('store the token', result)
    },
    async clear(baseUrl) {
      const had = (await store.get(baseUrl)) !== null
      const result = await run(command, ['clear', ...ATTRIBUTES(baseUrl)], '', timeoutMs)
      if (result?.code !== 0 && !(result?.code === 1 && result.stderr.trim() === '')) throw fail('clear the token', result)
      return had
    },
  }
  return {
    store,
    /** Works = a lookup ran and answered "found" or "nothing stored" (not "no D-Bus", not missing). */
    async available(): Promise<boolean> {
      const result = await lookup('http://availability-check.invalid')
      return result !== null && (result.code === 0 || (result.code === 1 && result.stderr.trim() === ''))
    },
  }
}

interface CredentialsFile {
  version: 1
  credentials: Record<string, { token: string; savedAt: string }>
}

function fileStore(path: string, fallback: boolean): CredentialStore {
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
    fallback,
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
