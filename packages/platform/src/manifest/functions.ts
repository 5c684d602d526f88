// The `functions` section: each Function's name, entrypoint file, access level, timeout
// and routes. Also fills the FunctionIndex that queues, cron, slots and the provider
// contract use to check their Function references.

import { isScalar } from 'yaml'
import { FUNCTION_NAME } from './names.ts'
import {
  arrayField,
  choiceField,
  integerField,
  member,
  readMapping,
  readString,
  type Fields,
  type Item,
} from './read-fields.ts'
import { readRoutes, reportRouteConflicts, type LocatedRoute } from './routes.ts'
import { reportDuplicateNames, requireSchemaVersion3, requireSdk, type SectionContext } from './section-context.ts'
import type { FunctionAccess, FunctionDeclaration } from './types.ts'

export const FUNCTION_ACCESS = ['user', 'public', 'system'] as const satisfies readonly FunctionAccess[]
export const DEFAULT_FUNCTION_TIMEOUT_SECONDS = 30
export const MAX_FUNCTION_TIMEOUT_SECONDS = 900

/**
 * Reads `functions`, declaring every named Function in `context.functions` (even one
 * with other problems, so references to it do not cascade into more errors).
 */
export function readFunctions(context: SectionContext, root: Fields): FunctionDeclaration[] | undefined {
  const items = arrayField(context.problems, root, 'functions', { required: false })
  if (items === undefined) return []
  const declarations: FunctionDeclaration[] = []
  const names: { name: string; item: Item }[] = []
  const routes: LocatedRoute[] = []
  let valid = true
  for (const item of items) {
    const result = readFunction(context, item)
    if (result.nameItem !== undefined && result.rawName !== undefined) names.push({ name: result.rawName, item: result.nameItem })
    routes.push(...result.routes)
    if (result.declaration === undefined) valid = false
    else declarations.push(result.declaration)
  }
  reportDuplicateNames(context.problems, names, 'Function')
  reportRouteConflicts(context.problems, routes)
  return valid ? declarations : undefined
}

interface FunctionReading {
  readonly declaration: FunctionDeclaration | undefined
  readonly rawName: string | undefined
  readonly nameItem: Item | undefined
  readonly routes: LocatedRoute[]
}

function readFunction(context: SectionContext, item: Item): FunctionReading {
  const { problems } = context
  const fields = readMapping(problems, item, 'functions[]')
  if (fields === undefined) return { declaration: undefined, rawName: undefined, nameItem: undefined, routes: [] }
  const nameItem = member(problems, fields, 'name', true)
  const rawName = nameItem === undefined ? undefined : stringValueOf(nameItem)
  const name = nameItem === undefined ? undefined : readString(problems, nameItem, FUNCTION_NAME)
  const entrypoint = readEntrypoint(context, fields)
  const access = choiceField(problems, fields, 'access', { required: true, choices: FUNCTION_ACCESS })
  if (rawName !== undefined) context.functions.declare(rawName, access)
  const timeoutSeconds = integerField(problems, fields, 'timeoutSeconds', { required: false, min: 1, max: MAX_FUNCTION_TIMEOUT_SECONDS })
  const routes = readFunctionRoutes(context, fields, { name: rawName, access })
  const declaration =
    name === undefined || entrypoint === undefined || access === undefined || routes === undefined
      ? undefined
      : {
          name,
          entrypoint,
          access,
          timeoutSeconds: timeoutSeconds ?? DEFAULT_FUNCTION_TIMEOUT_SECONDS,
          routes: routes.map((located) => located.route),
        }
  return { declaration, rawName, nameItem, routes: routes ?? [] }
}

function stringValueOf(item: Item): string | undefined {
  return isScalar(item.node) && typeof item.node.value === 'string' && item.node.value !== '' ? item.node.value : undefined
}

function readFunctionRoutes(
  context: SectionContext,
  fields: Fields,
  owner: { name: string | undefined; access: FunctionAccess | undefined },
): LocatedRoute[] | undefined {
  const item = member(context.problems, fields, 'routes', false)
  if (item === undefined) return []
  const routes = readRoutes(context.problems, item, owner.name)
  if (routes === undefined || routes.length === 0) return routes
  if (owner.access === 'system') {
    context.problems.report(
      'MANIFEST_ROUTES_ON_SYSTEM_FUNCTION',
      item.node,
      item.path,
      'a Function with access: system cannot have routes; system Functions are only invoked by the platform (queues, cron, integrations). Use access: public or user for an HTTP route',
    )
    return undefined
  }
  requireSchemaVersion3(context, item, 'function routes')
  requireSdk(context, item, { gate: 'functionRoutes', feature: 'function routes' })
  return routes
}

function readEntrypoint(context: SectionContext, fields: Fields): string | undefined {
  const { problems } = context
  const item = member(problems, fields, 'entrypoint', true)
  if (item === undefined) return undefined
  const entrypoint = readString(problems, item)
  if (entrypoint === undefined) return undefined
  const problem = entrypointProblem(entrypoint)
  if (problem !== null) {
    problems.report('MANIFEST_ENTRYPOINT_INVALID', item.node, item.path, problem)
    return undefined
  }
  const files = context.validation.files
  if (files !== undefined && !files.has(entrypoint)) {
    problems.report('MANIFEST_ENTRYPOINT_NOT_FOUND', item.node, item.path, `the bundle has no file "${entrypoint}"; add it or fix the path`)
    return undefined
  }
  return entrypoint
}

/**
 * Why an entrypoint path is unusable, or null. Entrypoints are bundle-relative
 * TypeScript files under functions/, written exactly as they appear in the bundle.
 *
 * @example
 * entrypointProblem('functions/create-task.ts') // null
 */
export function entrypointProblem(path: string): string | null {
  if (path.includes('\\')) return `"${path}" uses "\\"; write the path with "/"`
  if (path.startsWith('/')) return `"${path}" must be relative to the bundle root; remove the leading "/"`
  const segments = path.split('/')
  if (segments.includes('..')) return `"${path}" must not contain ".." segments`
  if (segments.includes('.') || segments.includes('')) return `"${path}" must not contain "." or empty segments; write it like "functions/create-task.ts"`
  if (segments[0] !== 'functions' || segments.length < 2) return `"${path}" must be under functions/, like "functions/create-task.ts"`
  if (!path.endsWith('.ts') || (segments[segments.length - 1] ?? '') === '.ts') return `"${path}" must be a TypeScript file ending in ".ts"`
  return null
}
