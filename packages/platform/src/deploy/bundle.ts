/**
 * Reads an uploaded bundle (`{ files: [{ path, content }] }`, content in base64) into
 * validated files, reporting every problem at once as BUNDLE_INVALID.
 */
import { ServiceError } from '../lib/errors.ts'
import { sha256Hex } from '../lib/crypto.ts'
import { BUNDLE_LIMITS, MANIFEST_PATH, MIGRATION_FILE, bundlePathProblem } from './bundle-files.ts'

export interface BundleFile {
  path: string
  content: Uint8Array
  sha256: string
}

export interface Migration {
  name: string
  version: number
  sql: string
  sha256: string
}

export interface Bundle {
  files: BundleFile[]
  manifestText: string
  migrations: Migration[]
  sha256: string
  size: number
}

interface Problem {
  path: string
  message: string
}

function invalid(problems: Problem[]): ServiceError {
  return new ServiceError('BUNDLE_INVALID', problems.length === 1
    ? `the bundle is not valid: ${problems[0]!.path}: ${problems[0]!.message}`
    : `the bundle is not valid (${problems.length} problems)`, { details: { problems } })
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

export function readBundle(body: unknown): Bundle {
  if (typeof body !== 'object' || body === null || !Array.isArray((body as { files?: unknown }).files)) {
    throw invalid([{ path: '', message: 'the body must be {"files": [{"path", "content"}]} with base64 content' }])
  }
  const entries = (body as { files: unknown[] }).files
  if (entries.length > BUNDLE_LIMITS.maxFiles) {
    throw invalid([{ path: '', message: `a bundle holds at most ${BUNDLE_LIMITS.maxFiles} files` }])
  }
  const problems: Problem[] = []
  const files: BundleFile[] = []
  const seen = new Set<string>()
  let size = 0
  entries.forEach((entry, index) => {
    const path = (entry as { path?: unknown })?.path
    const content = (entry as { content?: unknown })?.content
    if (typeof path !== 'string' || typeof content !== 'string' || !BASE64.test(content)) {
      problems.push({ path: typeof path === 'string' ? path : `files[${index}]`, message: 'each file needs a string path and base64 content' })
      return
    }
    const pathProblem = bundlePathProblem(path)
    if (pathProblem) return void problems.push({ path, message: pathProblem })
    if (seen.has(path)) return void problems.push({ path, message: 'the same path appears twice' })
    seen.add(path)
    const bytes = new Uint8Array(Buffer.from(content, 'base64'))
    if (bytes.byteLength > BUNDLE_LIMITS.maxFileBytes) {
      return void problems.push({ path, message: `a file may be at most ${BUNDLE_LIMITS.maxFileBytes} bytes` })
    }
    size += bytes.byteLength
    files.push({ path, content: bytes, sha256: sha256Hex(bytes) })
  })
  if (size > BUNDLE_LIMITS.maxTotalBytes) {
    problems.push({ path: '', message: `a bundle may be at most ${BUNDLE_LIMITS.maxTotalBytes} bytes in all` })
  }
  const manifest = files.find((f) => f.path === MANIFEST_PATH)
  if (!manifest) problems.push({ path: MANIFEST_PATH, message: 'the bundle has no service.yaml manifest' })

  const migrations: Migration[] = []
  const versions = new Map<number, string>()
  for (const file of files) {
    const match = MIGRATION_FILE.exec(file.path)
    if (!match) continue
    const version = Number(match[1])
    const other = versions.get(version)
    if (other) {
      problems.push({ path: file.path, message: `migration number ${match[1]} is also used by ${other}` })
      continue
    }
    versions.set(version, file.path)
    const sql = decodeUtf8(file.content)
    if (sql === null) {
      problems.push({ path: file.path, message: 'a migration must be UTF-8 text' })
      continue
    }
    migrations.push({ name: match[2]!, version, sql, sha256: file.sha256 })
  }
  const manifestText = manifest ? decodeUtf8(manifest.content) : ''
  if (manifestText === null) problems.push({ path: MANIFEST_PATH, message: 'service.yaml must be UTF-8 text' })
  if (problems.length > 0) throw invalid(problems)

  files.sort((a, b) => (a.path < b.path ? -1 : 1))
  migrations.sort((a, b) => a.version - b.version)
  const digest = sha256Hex(files.map((f) => `${f.path}\0${f.sha256}`).join('\n'))
  return { files, manifestText: manifestText!, migrations, sha256: digest, size }
}

function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return null
  }
}
