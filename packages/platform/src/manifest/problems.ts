// Collects validation problems with their YAML path and 1-based source position, and
// builds the path strings ("queues[0].function", "integrations.crm.events") that
// problems carry.

import type { LineCounter, Node } from 'yaml'
import { MANIFEST_PROBLEMS, type ProblemCode } from './codes.ts'
import type { Problem } from './types.ts'

/** Something with a source position: a YAML node, or a character offset. */
export type Located = Node | number

export class ProblemCollector {
  readonly #lines: LineCounter
  readonly #errors: Problem[] = []
  readonly #warnings: Problem[] = []

  constructor(lines: LineCounter) {
    this.#lines = lines
  }

  /** Records a problem; its severity comes from the code catalog. */
  report(code: ProblemCode, at: Located, path: string, message: string): void {
    const { line, column } = this.position(at)
    const severity = MANIFEST_PROBLEMS[code].severity
    const problem: Problem = { severity, code, path, line, column, message }
    if (severity === 'error') this.#errors.push(problem)
    else this.#warnings.push(problem)
  }

  position(at: Located): { line: number; column: number } {
    const offset = typeof at === 'number' ? at : (at.range?.[0] ?? 0)
    const { line, col } = this.#lines.linePos(offset)
    return { line, column: col }
  }

  lineOf(at: Located): number {
    return this.position(at).line
  }

  get hasErrors(): boolean {
    return this.#errors.length > 0
  }

  /** Errors and warnings, each in document order. */
  sorted(): { errors: Problem[]; warnings: Problem[] } {
    return { errors: inDocumentOrder(this.#errors), warnings: inDocumentOrder(this.#warnings) }
  }
}

function inDocumentOrder(problems: readonly Problem[]): Problem[] {
  return [...problems].sort((a, b) => a.line - b.line || a.column - b.column)
}

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/

/** The path of a mapping member: "app.id", or 'secrets["odd key"]' for unusual keys. */
export function fieldPath(parent: string, key: string): string {
  if (!PLAIN_KEY.test(key)) return `${parent}[${JSON.stringify(key)}]`
  return parent === '' ? key : `${parent}.${key}`
}

/** The path of an array entry: "queues[0]". */
export function itemPath(parent: string, index: number): string {
  return `${parent}[${index}]`
}
