/** `service validate <dir>`: the platform's manifest and bundle rules, offline. */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { validateManifest, type Problem } from '@service/platform/manifest'
import { bundlePathProblem } from '@service/platform/bundle'
import { collectBundleDir } from '@service/platform/bundle-dir'
import type { Io } from '../io.ts'

export function formatProblem(file: string, p: Problem): string {
  return `${file}:${p.line}:${p.column} ${p.code} ${p.message}`
}

export async function validateCommand(io: Io, dir: string | undefined): Promise<number> {
  if (!dir) {
    io.err('usage: service validate <dir>')
    return 2
  }
  const manifestPath = join(dir, 'service.yaml')
  if (!existsSync(manifestPath)) {
    io.err(`${manifestPath}:1:1 BUNDLE_MANIFEST_MISSING the directory has no service.yaml`)
    return 1
  }
  const { files } = collectBundleDir(dir)
  let failed = false
  for (const file of files) {
    const problem = bundlePathProblem(file.path)
    if (problem) {
      io.err(`${join(dir, file.path)}:1:1 BUNDLE_PATH_INVALID ${problem}`)
      failed = true
    }
  }
  const result = validateManifest(readFileSync(manifestPath, 'utf8'), { files: new Set(files.map((f) => f.path)) })
  for (const p of result.errors) io.err(formatProblem(manifestPath, p))
  for (const p of result.warnings) io.err(formatProblem(manifestPath, p).replace(` ${p.code} `, ` ${p.code} warning: `))
  if (result.errors.length > 0 || failed) {
    io.err(`${result.errors.length} error(s), ${result.warnings.length} warning(s)`)
    return 1
  }
  io.out(`${manifestPath}: valid (app ${result.manifest!.app.id}, ${files.length} files, ${result.warnings.length} warning(s))`)
  return 0
}
