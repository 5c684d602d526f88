/**
 * Which platform the CLI talks to. The first of: `--url`, `SERVICE_URL`, the URL the
 * platform recorded in its data directory when it started listening (`<data dir>/url`), and
 * http://localhost:8787. The data directory is `SERVICE_DATA_DIR` as for the platform, else
 * the nearest `.service` directory in the current directory or above it (the platform
 * makes `./.service` where it starts; an app directory below it finds it as git finds
 * `.git`). The operator key is read from the same place, so `PORT=9000 npm start` and then
 * `npx service …` in that directory or below it agree.
 *
 * A `.service/url` found from the current directory up may have come with a cloned
 * repository, so credentials from the environment (SERVICE_TOKEN, SERVICE_OPERATOR_KEY) go
 * to it only when it is a loopback address (`mayReceiveEnvCredentials`).
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { isIPv4 } from 'node:net'
import { dirname, join, resolve } from 'node:path'

export const DEFAULT_PLATFORM_URL = 'http://localhost:8787'

/**
 * The platform's data directory as the CLI sees it: SERVICE_DATA_DIR, else the nearest
 * `.service` directory from the current directory up, else `./.service`.
 */
export function dataDir(env: Record<string, string | undefined>): string {
  if (env.SERVICE_DATA_DIR !== undefined) return resolve(env.SERVICE_DATA_DIR)
  const cwd = process.cwd()
  for (let dir = cwd; ; dir = dirname(dir)) {
    const candidate = join(dir, '.service')
    if (statSync(candidate, { throwIfNoEntry: false })?.isDirectory()) return candidate
    if (dirname(dir) === dir) return join(cwd, '.service')
  }
}

/** Where the platform records the URL it serves on: `<data dir>/url`, one line. */
export function urlFilePath(env: Record<string, string | undefined>): string {
  return join(dataDir(env), 'url')
}

export interface PlatformUrl {
  readonly url: string
  /** Where the URL came from, for messages: `--url`, `SERVICE_URL`, the file's path, or `the default`. */
  readonly source: string
}

/**
 * The platform URL and where it came from, or a message when the chosen one is not an
 * http(s) URL (a bad value is an error, not a reason to try the next source).
 *
 * @example
 *   platformUrl({ flag: undefined, env: { SERVICE_URL: 'http://localhost:9000' } })
 *   // { url: 'http://localhost:9000', source: 'SERVICE_URL' }
 */
export function platformUrl(options: { flag: string | undefined; env: Record<string, string | undefined> }): PlatformUrl | { error: string } {
  const { flag, env } = options
  if (flag !== undefined) return checked(flag, '--url')
  if (env.SERVICE_URL) return checked(env.SERVICE_URL, 'SERVICE_URL')
  const path = urlFilePath(env)
  if (existsSync(path)) {
    let text: string
    try {
      text = readFileSync(path, 'utf8').trim()
    } catch (error) {
      return { error: `cannot read the platform URL from ${path} (${(error as Error).message}); set SERVICE_URL` }
    }
    return checked(text, path)
  }
  return { url: DEFAULT_PLATFORM_URL, source: 'the default' }
}

function checked(text: string, source: string): PlatformUrl | { error: string } {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return { error: `the platform URL "${text}" (from ${source}) is not a URL` }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { error: `the platform URL "${text}" (from ${source}) is not an http or https URL` }
  }
  return { url: text, source }
}

/**
 * Whether SERVICE_TOKEN and SERVICE_OPERATOR_KEY may be sent to the URL: the person named it
 * (--url, SERVICE_URL), it is the default, or it is loopback (127.0.0.0/8, ::1, localhost),
 * where only a platform on this machine listens. Tokens `service login` stored are keyed by
 * origin and need no such check.
 *
 * @example
 *   mayReceiveEnvCredentials({ url: 'http://203.0.113.7:8787', source: '/repo/.service/url' }) // false
 *   mayReceiveEnvCredentials({ url: 'http://127.0.0.1:9000', source: '/repo/.service/url' })   // true
 */
export function mayReceiveEnvCredentials(target: PlatformUrl): boolean {
  if (target.source === '--url' || target.source === 'SERVICE_URL' || target.source === 'the default') return true
  const host = new URL(target.url).hostname
  return host === 'localhost' || host === '[::1]' || (isIPv4(host) && host.startsWith('127.'))
}

/** A line saying where an unreachable URL came from and how to point the CLI elsewhere (none for --url and SERVICE_URL). */
export function unreachableHint(target: PlatformUrl): string | null {
  if (target.source === '--url' || target.source === 'SERVICE_URL') return null
  if (target.source === 'the default') {
    return '  (the default URL: no --url, no SERVICE_URL and no .service/url of a platform started in this directory or above;'
      + ' set SERVICE_URL to the platform\'s URL, or SERVICE_DATA_DIR to its data directory)'
  }
  return `  (the URL is from ${target.source}, written by the platform when it last started; start it again, or set SERVICE_URL)`
}
