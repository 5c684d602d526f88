// Shared fixtures for the manifest tests: a minimal valid manifest whose lines are
// known, so each test appends a section and asserts exact line and column numbers.

import assert from 'node:assert/strict'
import type { ManifestResult, Problem, ValidationContext } from './types.ts'
import { validateManifest } from './validate.ts'

/**
 * Lines 1-13 of every fixture. Line 6 holds the SDK version; "worker" (line 8) is a
 * system Function and "page" (line 11) a user Function.
 */
export function baseManifest(options: { sdk?: string } = {}): string {
  return [
    'schemaVersion: 3',
    'app:',
    '  id: tasks',
    'runtime:',
    '  sdk:',
    `    version: ${options.sdk ?? '2.6.0'}`,
    'functions:',
    '  - name: worker',
    '    entrypoint: functions/worker.ts',
    '    access: system',
    '  - name: page',
    '    entrypoint: functions/page.ts',
    '    access: user',
    '',
  ].join('\n')
}

/** The first line after baseManifest(). */
export const FIRST_FREE_LINE = 14

/** baseManifest() followed by `lines` (joined with newlines) starting at line 14. */
export function manifestWith(lines: readonly string[], options: { sdk?: string } = {}): string {
  return baseManifest(options) + lines.join('\n') + '\n'
}

export interface Where {
  readonly code: string
  readonly path: string
  readonly line: number
  readonly column: number
}

export function where(problem: Problem): Where {
  return { code: problem.code, path: problem.path, line: problem.line, column: problem.column }
}

/** Validates and asserts exactly one error (and no warnings); returns it. */
export function onlyError(text: string, context?: ValidationContext): Problem {
  const result = validateManifest(text, context)
  assert.equal(result.manifest, null, 'a manifest with an error is not returned')
  assert.deepEqual(result.warnings.map(where), [], 'no warnings expected')
  assert.equal(result.errors.length, 1, `expected one error, got:\n${describeProblems(result.errors)}`)
  return result.errors[0] as Problem
}

/** Validates and asserts there are no errors; returns the result. */
export function valid(text: string, context?: ValidationContext): ManifestResult {
  const result = validateManifest(text, context)
  assert.deepEqual(result.errors.map(where), [], `expected no errors, got:\n${describeProblems(result.errors)}`)
  assert.notEqual(result.manifest, null)
  return result
}

export function describeProblems(problems: readonly Problem[]): string {
  return problems.map((p) => `  ${p.line}:${p.column} ${p.code} ${p.path}: ${p.message}`).join('\n')
}
