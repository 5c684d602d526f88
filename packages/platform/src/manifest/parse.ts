// Turns service.yaml text into a YAML node tree that keeps source positions, and turns
// the YAML library's own errors (syntax, duplicate keys, multiple documents, unresolved
// tags) into manifest problems. Validation rules live in validate.ts and the section
// files; this file knows only YAML.

import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Node, type YAMLError } from 'yaml'
import type { ProblemCode } from './codes.ts'
import { fieldPath, itemPath } from './problems.ts'

export interface YamlIssue {
  readonly code: ProblemCode
  readonly offset: number
  readonly path: string
  readonly message: string
}

export interface ParsedYaml {
  readonly lineCounter: LineCounter
  /** The top-level node; null for an empty document. */
  readonly root: Node | null
  readonly issues: readonly YamlIssue[]
  /**
   * False when the tree cannot be trusted for schema validation (syntax errors, several
   * documents). Duplicate keys and unresolved tags leave the tree usable.
   */
  readonly usable: boolean
}

/**
 * Parses YAML 1.2 (core schema, so `yes`/`no` stay strings) with positions.
 *
 * @example
 * const { root, issues } = parseManifestYaml('schemaVersion: 3\n')
 */
export function parseManifestYaml(text: string): ParsedYaml {
  const lineCounter = new LineCounter()
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true })
  const root = document.contents
  const issues: YamlIssue[] = []
  let usable = true
  for (const error of document.errors) {
    const issue = errorIssue(error, { text, root, lineCounter })
    if (issue.code !== 'MANIFEST_YAML_DUPLICATE_KEY') usable = false
    issues.push(issue)
  }
  for (const warning of document.warnings) {
    issues.push({ code: 'MANIFEST_YAML_SYNTAX', offset: warning.pos[0], path: '', message: sentence(warning.message) })
  }
  return { lineCounter, root, issues, usable }
}

function errorIssue(error: YAMLError, source: { text: string; root: Node | null; lineCounter: LineCounter }): YamlIssue {
  const offset = error.pos[0]
  if (error.code === 'DUPLICATE_KEY') {
    const key = keyAt(source.root, offset, '')
    const name = key?.name ?? source.text.slice(error.pos[0], error.pos[1]).trim()
    const first = key?.firstOffset === undefined ? '' : ` (first at line ${source.lineCounter.linePos(key.firstOffset).line})`
    return {
      code: 'MANIFEST_YAML_DUPLICATE_KEY',
      offset,
      path: key?.path ?? '',
      message: `the key "${name}" appears more than once in this mapping${first}; keep only one (the first is the one that is read)`,
    }
  }
  if (error.code === 'MULTIPLE_DOCS') {
    return {
      code: 'MANIFEST_YAML_MULTIPLE_DOCUMENTS',
      offset,
      path: '',
      message: 'service.yaml must hold exactly one YAML document; remove the second "---" and what follows, or merge it into the first',
    }
  }
  return { code: 'MANIFEST_YAML_SYNTAX', offset, path: '', message: `YAML syntax error: ${sentence(error.message)}` }
}

function sentence(message: string): string {
  const text = message.trim()
  return text.charAt(0).toLowerCase() + text.slice(1)
}

interface KeyLocation {
  readonly name: string
  readonly path: string
  /** Where the same key first appears in the same mapping. */
  readonly firstOffset: number | undefined
}

/** The mapping key that starts at `offset`, with its path, searching the whole tree. */
function keyAt(node: unknown, offset: number, path: string): KeyLocation | undefined {
  if (isMap(node)) {
    for (const pair of node.items) {
      if (!isPair(pair) || !isScalar(pair.key)) continue
      const name = String(pair.key.value)
      const childPath = fieldPath(path, name)
      if (pair.key.range?.[0] === offset) {
        const first = node.items.find((other) => isPair(other) && isScalar(other.key) && String(other.key.value) === name)
        return { name, path: childPath, firstOffset: isScalar(first?.key) ? first.key.range?.[0] : undefined }
      }
      const found = keyAt(pair.value, offset, childPath)
      if (found !== undefined) return found
    }
  }
  if (isSeq(node)) {
    for (const [index, item] of node.items.entries()) {
      const found = keyAt(item, offset, itemPath(path, index))
      if (found !== undefined) return found
    }
  }
  return undefined
}
