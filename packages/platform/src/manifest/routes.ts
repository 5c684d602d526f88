// Function routes (`functions[].routes`): the HTTP method and app URL path that expose a
// Function, such as `GET /api/tasks/:id`. Checks each path's syntax, keeps paths away from
// the platform's reserved prefixes, and finds routes that would match the same requests.

import type { ProblemCode } from './codes.ts'
import type { ProblemCollector } from './problems.ts'
import { choiceField, member, readArray, readMapping, readString, type Item } from './read-fields.ts'
import type { FunctionRoute, RouteMethod } from './types.ts'

export const ROUTE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const satisfies readonly RouteMethod[]

/** Paths the platform serves itself; a route may not be one of these or lie under one. */
export const RESERVED_ROUTE_PREFIXES = ['/_service', '/rest', '/v1', '/auth'] as const

export const MAX_ROUTE_PATH_LENGTH = 256

const LITERAL_SEGMENT = /^[A-Za-z0-9._~-]+$/
const PARAM_SEGMENT = /^:([a-zA-Z][a-zA-Z0-9_]*)$/

/** A route with the node it came from, for conflict reports. */
export interface LocatedRoute {
  readonly route: FunctionRoute
  readonly item: Item
  readonly functionName: string | undefined
}

/** Reads one Function's `routes` array; undefined when any route is invalid. */
export function readRoutes(problems: ProblemCollector, routes: Item, functionName: string | undefined): LocatedRoute[] | undefined {
  const items = readArray(problems, routes)
  if (items === undefined) return undefined
  const located: LocatedRoute[] = []
  let valid = true
  for (const item of items) {
    const route = readRoute(problems, item)
    if (route === undefined) valid = false
    else located.push({ route, item, functionName })
  }
  return valid ? located : undefined
}

function readRoute(problems: ProblemCollector, item: Item): FunctionRoute | undefined {
  const fields = readMapping(problems, item, 'functions[].routes[]')
  if (fields === undefined) return undefined
  const method = choiceField(problems, fields, 'method', { required: true, choices: ROUTE_METHODS })
  const pathItem = member(problems, fields, 'path', true)
  const path = pathItem === undefined ? undefined : readRoutePath(problems, pathItem)
  if (method === undefined || path === undefined) return undefined
  return { method, path }
}

function readRoutePath(problems: ProblemCollector, item: Item): string | undefined {
  const path = readString(problems, item, { maxLength: MAX_ROUTE_PATH_LENGTH })
  if (path === undefined) return undefined
  const problem = routePathProblem(path)
  if (problem === null) return path
  problems.report(problem.code, item.node, item.path, problem.message)
  return undefined
}

/**
 * Why a route path is unusable, or null when it is fine.
 *
 * @example
 * routePathProblem('/api/tasks/:id') // null
 * routePathProblem('/rest/tasks')?.code // 'MANIFEST_ROUTE_PATH_RESERVED'
 */
export function routePathProblem(path: string): { code: ProblemCode; message: string } | null {
  const invalid = (message: string) => ({ code: 'MANIFEST_ROUTE_PATH_INVALID' as const, message })
  if (!path.startsWith('/')) return invalid(`"${path}" must start with "/"`)
  if (path.length > MAX_ROUTE_PATH_LENGTH) return invalid(`is ${path.length} characters long; the limit is ${MAX_ROUTE_PATH_LENGTH}`)
  if (path === '/') return null
  if (path.endsWith('/')) return invalid(`"${path}" must not end with "/"; write "${path.replace(/\/+$/, '') || '/'}"`)
  const segmentProblem = firstSegmentProblem(path)
  if (segmentProblem !== null) return invalid(segmentProblem)
  const reserved = RESERVED_ROUTE_PREFIXES.find((prefix) => path === prefix || path.startsWith(`${prefix}/`))
  if (reserved !== undefined) {
    return {
      code: 'MANIFEST_ROUTE_PATH_RESERVED',
      message: `"${path}" is under ${reserved}, which the platform reserves (${RESERVED_ROUTE_PREFIXES.join(', ')}); choose another path`,
    }
  }
  return null
}

function firstSegmentProblem(path: string): string | null {
  const params = new Set<string>()
  for (const segment of path.slice(1).split('/')) {
    if (segment === '') return `"${path}" has an empty segment ("//")`
    if (segment === '.' || segment === '..') return `"${path}" has a "${segment}" segment; write the path without dot segments`
    const param = PARAM_SEGMENT.exec(segment)?.[1]
    if (param !== undefined) {
      if (params.has(param)) return `the parameter ":${param}" appears twice in "${path}"; parameter names must be unique within a path`
      params.add(param)
      continue
    }
    if (segment.startsWith(':')) {
      return `"${segment}" is not a valid parameter; write ":" followed by a letter and then letters, digits or "_"`
    }
    if (!LITERAL_SEGMENT.test(segment)) {
      return `the segment "${segment}" may only contain letters, digits and . _ ~ - (or be a ":param")`
    }
  }
  return null
}

/**
 * Reports a route whose method and path shape (parameter names ignored) repeat an
 * earlier route, in the same or another Function; the second one is reported.
 */
export function reportRouteConflicts(problems: ProblemCollector, routes: readonly LocatedRoute[]): void {
  const first = new Map<string, LocatedRoute>()
  for (const located of routes) {
    const key = `${located.route.method} ${routeShape(located.route.path)}`
    const earlier = first.get(key)
    if (earlier === undefined) {
      first.set(key, located)
      continue
    }
    const owner = earlier.functionName === undefined ? '' : ` of Function "${earlier.functionName}"`
    problems.report(
      'MANIFEST_ROUTE_CONFLICT',
      located.item.node,
      located.item.path,
      `${located.route.method} ${located.route.path} matches the same requests as ${earlier.route.method} ${earlier.route.path}${owner} at line ${problems.lineOf(earlier.item.node)}`,
    )
  }
}

/** "/api/tasks/:id" and "/api/tasks/:taskId" share the shape "/api/tasks/:". */
function routeShape(path: string): string {
  return path.replace(/\/:[^/]+/g, '/:')
}
