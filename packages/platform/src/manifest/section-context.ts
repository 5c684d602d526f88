// What every manifest section validator shares once the top of the file is read: the
// problem collector, the declared Functions (for references), the pinned SDK version (for
// feature gates), the app's secret names and the caller's validation context.

import type { Node } from 'yaml'
import type { ProblemCollector } from './problems.ts'
import { member, readString, type Fields, type Item } from './read-fields.ts'
import { SDK_GATES, sdkAtLeast, type SdkGate } from './sdk-versions.ts'
import type { FunctionAccess, ValidationContext } from './types.ts'

export interface SectionContext {
  readonly problems: ProblemCollector
  readonly functions: FunctionIndex
  /** The pinned SDK version when it is valid and supported; gates are skipped otherwise. */
  readonly sdkVersion: string | undefined
  /** The integer schemaVersion when one is given, even an unsupported one. */
  readonly schemaVersion: number | undefined
  /** The app slug when valid. */
  readonly appId: string | undefined
  /** Names declared under secrets, with the line of each. */
  readonly secretNames: ReadonlyMap<string, number>
  readonly validation: ValidationContext
}

/** Declared Function names and their access level (undefined when the access is invalid). */
export class FunctionIndex {
  readonly #access = new Map<string, FunctionAccess | undefined>()

  /** The first declaration of a name wins; later ones are duplicates reported elsewhere. */
  declare(name: string, access: FunctionAccess | undefined): void {
    if (!this.#access.has(name)) this.#access.set(name, access)
  }

  has(name: string): boolean {
    return this.#access.has(name)
  }

  accessOf(name: string): FunctionAccess | undefined {
    return this.#access.get(name)
  }

  names(): string[] {
    return [...this.#access.keys()]
  }
}

/**
 * Reads a member that names a Function and checks that it is declared with access:
 * system. `role` completes "… must be a Function with access: system", e.g. "a queue
 * consumer".
 */
export function systemFunctionField(
  context: SectionContext,
  fields: Fields,
  key: string,
  options: { required: boolean; role: string },
): string | undefined {
  const item = member(context.problems, fields, key, options.required)
  if (item === undefined) return undefined
  const name = readString(context.problems, item)
  if (name === undefined) return undefined
  return checkSystemFunction(context, item, name, options.role) ? name : undefined
}

function checkSystemFunction(context: SectionContext, item: Item, name: string, role: string): boolean {
  const { functions, problems } = context
  if (!functions.has(name)) {
    const declared = functions.names()
    problems.report(
      'MANIFEST_FUNCTION_NOT_DECLARED',
      item.node,
      item.path,
      `no Function named "${name}" is declared in functions${declared.length === 0 ? '' : ` (declared: ${declared.join(', ')})`}; declare it with access: system or fix the name`,
    )
    return false
  }
  const access = functions.accessOf(name)
  if (access !== undefined && access !== 'system') {
    problems.report(
      'MANIFEST_FUNCTION_NOT_SYSTEM',
      item.node,
      item.path,
      `the Function "${name}" has access: ${access}, but ${role} must be a Function with access: system`,
    )
    return false
  }
  return true
}

/**
 * Reports that `feature` (for example "function routes") needs a newer pinned SDK.
 * Returns whether the gate passed.
 */
export function requireSdk(
  context: SectionContext,
  at: { node: Node; path: string },
  options: { gate: SdkGate; feature: string },
): boolean {
  const minimum = SDK_GATES[options.gate]
  if (context.sdkVersion === undefined || sdkAtLeast(context.sdkVersion, minimum)) return true
  context.problems.report(
    'MANIFEST_SDK_VERSION_TOO_LOW',
    at.node,
    at.path,
    `${options.feature} need runtime.sdk.version ${minimum} or later; this manifest pins ${context.sdkVersion}`,
  )
  return false
}

/** Reports that `feature` needs schemaVersion 3 when an older integer version is given. */
export function requireSchemaVersion3(
  context: SectionContext,
  at: { node: Node; path: string },
  feature: string,
): void {
  if (context.schemaVersion === undefined || context.schemaVersion >= 3) return
  context.problems.report(
    'MANIFEST_SCHEMA_VERSION_TOO_LOW',
    at.node,
    at.path,
    `${feature} need schemaVersion: 3; this manifest declares schemaVersion: ${context.schemaVersion}`,
  )
}

/**
 * Reports later entries whose name repeats an earlier one, naming the first's line.
 * `what` names the kind, e.g. "Function" or "queue".
 */
export function reportDuplicateNames(
  problems: ProblemCollector,
  entries: readonly { readonly name: string; readonly item: Item }[],
  what: string,
): void {
  const firstLine = new Map<string, number>()
  for (const { name, item } of entries) {
    const seenAt = firstLine.get(name)
    if (seenAt === undefined) {
      firstLine.set(name, problems.lineOf(item.node))
      continue
    }
    problems.report('MANIFEST_DUPLICATE_NAME', item.node, item.path, `the ${what} name "${name}" is already used at line ${seenAt}; names must be unique`)
  }
}
