/**
 * The platform's layers, checked on its import graph: lib/ at the ground, db/ on lib/, http/
 * on both, and features over them depending downward only, so no two folders import each
 * other, directly or around a circle. The composition root (platform.ts, main.ts and the
 * start-up banner) may import everything; tests and test helpers (`*.test.ts`, `test-*.ts`)
 * are not part of the graph.
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const SRC = dirname(fileURLToPath(import.meta.url))
const COMPOSITION_ROOT = new Set(['platform.ts', 'main.ts', 'startup-banner.ts'])
/** Modules at the top of src/ that stand at the ground with lib/ (config.ts reads the environment once). */
const GROUND_FILES = new Set(['config.ts'])

interface Import { from: string; to: string }

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    const isTest = entry.name.endsWith('.test.ts') || entry.name.startsWith('test-')
    return entry.name.endsWith('.ts') && !isTest ? [relative(SRC, path)] : []
  })
}

/** Every relative import (static, re-export or dynamic) of the platform's source, as src-relative paths. */
export function importsOf(files: string[], read: (file: string) => string): Import[] {
  const specifier = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm
  return files.flatMap((file) => [...read(file).matchAll(specifier)].map((m) => ({
    from: file,
    to: normalize(join(dirname(file), m[1]!)),
  })))
}

/** The folder (or top-level file) a src-relative path belongs to. */
function layerOf(path: string): string {
  return path.includes('/') ? path.slice(0, path.indexOf('/')) : path
}

/** A circle of folders in the graph, as a path that starts and ends at the same folder, or null. */
export function findCircle(edges: Map<string, Set<string>>): string[] | null {
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (node: string): string[] | null => {
    state.set(node, 'open')
    stack.push(node)
    for (const next of [...(edges.get(node) ?? [])].sort()) {
      if (state.get(next) === 'open') return [...stack.slice(stack.indexOf(next)), next]
      if (state.get(next) === undefined) {
        const found = visit(next)
        if (found) return found
      }
    }
    stack.pop()
    state.set(node, 'done')
    return null
  }
  for (const node of [...edges.keys()].sort()) {
    if (state.get(node) === undefined) {
      const found = visit(node)
      if (found) return found
    }
  }
  return null
}

const files = sourceFiles(SRC)
const imports = importsOf(files, (file) => readFileSync(join(SRC, file), 'utf8'))
  .filter((i) => !i.to.startsWith('..'))

function importsLeaving(layer: string, allowed: string[]): string[] {
  return imports
    .filter((i) => layerOf(i.from) === layer && !allowed.includes(layerOf(i.to)))
    .map((i) => `${i.from} -> ${i.to}`)
}

describe('layers', () => {
  test('the graph is read: every feature folder shows up with its imports', () => {
    const layers = new Set(imports.map((i) => layerOf(i.from)))
    for (const folder of ['db', 'http', 'apps', 'identity', 'functions', 'integrations']) {
      assert.ok(layers.has(folder), `no imports read from ${folder}/`)
    }
    assert.ok(files.includes('lib/errors.ts') && files.includes('db/db.ts'))
    assert.ok(imports.some((i) => i.from === 'apps/routes.ts' && i.to === 'apps/apps.ts'))
  })

  test('lib/ imports nothing but lib/', () => {
    assert.deepEqual(importsLeaving('lib', ['lib']), [])
  })

  test('db/ imports only db/, lib/ and config.ts', () => {
    assert.deepEqual(importsLeaving('db', ['db', 'lib', ...GROUND_FILES]), [])
  })

  test('http/ imports only http/, db/ and lib/', () => {
    assert.deepEqual(importsLeaving('http', ['http', 'db', 'lib', ...GROUND_FILES]), [])
  })

  test('no two folders import each other, directly or around a circle', () => {
    const edges = new Map<string, Set<string>>()
    for (const { from, to } of imports) {
      const [a, b] = [layerOf(from), layerOf(to)]
      if (a === b || COMPOSITION_ROOT.has(a) || GROUND_FILES.has(b)) continue
      edges.set(a, (edges.get(a) ?? new Set()).add(b))
    }
    const circle = findCircle(edges)
    const why = circle === null ? '' : circle.slice(1).map((to, i) => {
      const from = circle[i]!
      const example = imports.find((x) => layerOf(x.from) === from && layerOf(x.to) === to)!
      return `${from} -> ${to} (${example.from} imports ${example.to})`
    }).join('; ')
    assert.equal(circle, null, why)
  })

  test('findCircle finds a circle of three and none in a chain', () => {
    const graph = (pairs: Array<[string, string]>) => {
      const edges = new Map<string, Set<string>>()
      for (const [a, b] of pairs) edges.set(a, (edges.get(a) ?? new Set()).add(b))
      return edges
    }
    assert.deepEqual(findCircle(graph([['a', 'b'], ['b', 'c'], ['c', 'a']])), ['a', 'b', 'c', 'a'])
    assert.equal(findCircle(graph([['a', 'b'], ['b', 'c'], ['a', 'c']])), null)
  })

  test('importsOf reads static, re-export and dynamic imports', () => {
    const source = [
      "import { a } from './a.ts'",
      "export { b } from '../lib/b.ts'",
      "const c = await import('./c.ts')",
      "import './d.ts'",
      "import e from 'hono'",
    ].join('\n')
    assert.deepEqual(importsOf(['apps/x.ts'], () => source).map((i) => i.to),
      ['apps/a.ts', 'lib/b.ts', 'apps/c.ts', 'apps/d.ts'])
  })
})
