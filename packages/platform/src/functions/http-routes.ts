/**
 * Function routes (schema 3, SDK 2.3.0): the table that maps a request's method and path
 * to the Function a release declares for it (`functions[].routes`, checked by
 * manifest/routes.ts). A release's table is compiled once, into a tree of path segments,
 * and matched per request without allocating more than the parameters it finds.
 *
 * Matching rules (the manifest validator already refused conflicting shapes):
 * - Paths compare segment by segment, case-sensitively, after percent-decoding each
 *   segment; a segment that does not decode matches nothing. `/tasks/` is not `/tasks`.
 * - A literal segment wins over a parameter at the same place (`/tasks/new` before
 *   `/tasks/:id`), and the earlier segment decides first.
 * - `HEAD` runs a declared HEAD route, else the GET route of the same path (HTTP answers
 *   HEAD as GET without the body).
 * - `system` Functions never get a route (the validator refuses them; this is the backstop).
 */
import type { FunctionDeclaration, RouteMethod } from '../manifest/index.ts'

/** A request that reached a declared route. */
export interface RouteMatch {
  readonly declaration: FunctionDeclaration
  /** The route's own method: `GET` when a HEAD request runs a GET route. */
  readonly routeMethod: RouteMethod
  /** Decoded path parameters by name. */
  readonly params: Readonly<Record<string, string>>
}

/** Why a request matched no route. `methods`: the path matches routes of these methods only. */
export type RouteMiss = { readonly matched: false; readonly methods: readonly RouteMethod[] }

export interface RouteTable {
  /** True when the release declares no route at all (the edge skips matching). */
  readonly empty: boolean
  match(method: string, pathname: string): ({ readonly matched: true } & RouteMatch) | RouteMiss
}

interface Node {
  readonly literals: Map<string, Node>
  /** Parameter children by name: routes may name the parameter at one place differently (`/t/:id`, `/t/:taskId/x`). */
  readonly params: Array<{ readonly name: string; readonly node: Node }>
  readonly routes: Map<RouteMethod, FunctionDeclaration>
}

const NO_METHODS: readonly RouteMethod[] = Object.freeze([])
const MISS: RouteMiss = Object.freeze({ matched: false, methods: NO_METHODS })

function newNode(): Node {
  return { literals: new Map(), params: [], routes: new Map() }
}

/**
 * Compiles a release's route table from its Function declarations.
 *
 * @example
 * const table = compileRoutes(manifest.functions)
 * table.match('GET', '/api/tasks/42') // { matched: true, declaration, routeMethod: 'GET', params: { id: '42' } }
 */
export function compileRoutes(declarations: Iterable<FunctionDeclaration>): RouteTable {
  const root = newNode()
  let empty = true
  for (const declaration of declarations) {
    if (declaration.access === 'system') continue
    for (const route of declaration.routes ?? []) {
      let node = root
      for (const segment of segmentsOf(route.path)) {
        if (segment.startsWith(':')) {
          const name = segment.slice(1)
          let param = node.params.find((candidate) => candidate.name === name)
          if (param === undefined) node.params.push((param = { name, node: newNode() }))
          node = param.node
        } else {
          let next = node.literals.get(segment)
          if (next === undefined) node.literals.set(segment, (next = newNode()))
          node = next
        }
      }
      if (!node.routes.has(route.method)) node.routes.set(route.method, declaration)
      empty = false
    }
  }
  return {
    empty,
    match(method, pathname) {
      if (empty) return MISS
      const raw = segmentsOf(pathname)
      const segments: string[] = []
      for (const segment of raw) {
        const decoded = decodeSegment(segment)
        if (decoded === null) return MISS
        segments.push(decoded)
      }
      const params: Array<[string, string]> = []
      const found = find(root, segments, 0, params, method)
      if (found === null) {
        const methods = new Set<RouteMethod>()
        collectMethods(root, segments, 0, methods)
        return methods.size === 0 ? MISS : { matched: false, methods: [...methods] }
      }
      return { matched: true, declaration: found.declaration, routeMethod: found.method, params: Object.freeze(Object.fromEntries(params)) }
    },
  }
}

function segmentsOf(path: string): string[] {
  return path === '/' ? [] : path.slice(1).split('/')
}

function decodeSegment(segment: string): string | null {
  if (!segment.includes('%')) return segment
  try {
    return decodeURIComponent(segment)
  } catch {
    return null
  }
}

function routeAt(node: Node, method: string): { declaration: FunctionDeclaration; method: RouteMethod } | null {
  const exact = node.routes.get(method as RouteMethod)
  if (exact !== undefined) return { declaration: exact, method: method as RouteMethod }
  if (method === 'HEAD') {
    const get = node.routes.get('GET')
    if (get !== undefined) return { declaration: get, method: 'GET' }
  }
  return null
}

function find(
  node: Node,
  segments: readonly string[],
  index: number,
  params: Array<[string, string]>,
  method: string,
): { declaration: FunctionDeclaration; method: RouteMethod } | null {
  if (index === segments.length) return routeAt(node, method)
  const segment = segments[index]!
  if (segment === '') return null
  const literal = node.literals.get(segment)
  if (literal !== undefined) {
    const found = find(literal, segments, index + 1, params, method)
    if (found !== null) return found
  }
  for (const param of node.params) {
    params.push([param.name, segment])
    const found = find(param.node, segments, index + 1, params, method)
    if (found !== null) return found
    params.pop()
  }
  return null
}

function collectMethods(node: Node, segments: readonly string[], index: number, methods: Set<RouteMethod>): void {
  if (index === segments.length) {
    for (const method of node.routes.keys()) methods.add(method)
    return
  }
  const segment = segments[index]!
  if (segment === '') return
  const literal = node.literals.get(segment)
  if (literal !== undefined) collectMethods(literal, segments, index + 1, methods)
  for (const param of node.params) collectMethods(param.node, segments, index + 1, methods)
}
