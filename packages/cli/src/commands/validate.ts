/**
 * `service validate <dir>`: the platform's manifest and bundle rules, offline. Each problem
 * is `file:line:column CODE message`; --json prints them as objects.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { validateManifest, type Problem } from '@service/platform/manifest'
import { bundlePathProblem } from '@service/platform/bundle'
import { collectBundleDir } from '@service/platform/bundle-dir'
import { CliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'

export function formatProblem(file: string, p: Problem): string {
  return `${file}:${p.line}:${p.column} ${p.code} ${p.message}`
}

/** A problem as --json prints it. */
export interface ProblemView {
  file: string
  line: number
  column: number
  code: string
  message: string
}

export function problemView(file: string, p: Pick<Problem, 'line' | 'column' | 'code' | 'message'>): ProblemView {
  return { file, line: p.line, column: p.column, code: p.code, message: p.message }
}

/** The error for a directory without service.yaml, naming `service init`. */
export function manifestMissing(dir: string): CliError {
  const path = join(dir, 'service.yaml')
  return new CliError('BUNDLE_MANIFEST_MISSING', `${path} does not exist: the directory has no service.yaml`, { next: `service init ${dir}` })
}

export async function validateCommand(io: Io, dir: string | undefined): Promise<number> {
  if (!dir) throw usageError('service validate: name the app directory', usageOf('validate'))
  const manifestPath = join(dir, 'service.yaml')
  if (!existsSync(manifestPath)) throw manifestMissing(dir)
  const { files } = collectBundleDir(dir)
  const errors: ProblemView[] = []
  for (const file of files) {
    const problem = bundlePathProblem(file.path)
    if (problem) errors.push({ file: join(dir, file.path), line: 1, column: 1, code: 'BUNDLE_PATH_INVALID', message: problem })
  }
  const result = validateManifest(readFileSync(manifestPath, 'utf8'), { files: new Set(files.map((f) => f.path)) })
  errors.push(...result.errors.map((p) => problemView(manifestPath, p)))
  const warnings = result.warnings.map((p) => problemView(manifestPath, p))
  const valid = errors.length === 0
  printResult(io, { valid, app: result.manifest?.app.id ?? null, files: files.length, errors, warnings }, () => {
    for (const p of errors) io.err(`${p.file}:${p.line}:${p.column} ${p.code} ${p.message}`)
    for (const p of warnings) io.err(`${p.file}:${p.line}:${p.column} ${p.code} warning: ${p.message}`)
    if (valid) io.out(`${manifestPath}: valid (app ${result.manifest!.app.id}, ${files.length} files, ${warnings.length} warning(s))`)
  })
  if (!valid) {
    throw new CliError(errors.some((p) => p.code === 'BUNDLE_PATH_INVALID') ? 'BUNDLE_INVALID' : 'MANIFEST_INVALID',
      `${errors.length} error(s), ${warnings.length} warning(s)`)
  }
  return 0
}
