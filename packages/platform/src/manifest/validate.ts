// Validates a service.yaml (schema version 3) completely: parses it with positions, reads
// every section, reports every problem at once (errors and warnings apart, in document
// order) and, when there is no error, returns the Manifest with defaults applied. The
// top-level fields (schemaVersion, app, runtime, secrets) are read here; each other
// section has its own file.

import { isMap, isScalar, type Node } from 'yaml'
import { readCron } from './cron.ts'
import { readEmail } from './email.ts'
import { readAi } from './ai.ts'
import { readFunctions } from './functions.ts'
import { APP_SLUG, SECRET_NAME } from './names.ts'
import { parseManifestYaml } from './parse.ts'
import { ProblemCollector } from './problems.ts'
import { readProvides } from './provides.ts'
import { readQueues } from './queues.ts'
import {
  choiceField,
  freeMembers,
  mappingField,
  member,
  readInteger,
  readMapping,
  readString,
  stringField,
  type Fields,
  type Item,
} from './read-fields.ts'
import { readData } from './search.ts'
import { MINIMUM_SDK_VERSION, PLATFORM_SDK_VERSION, parseSdkVersion, sdkAtLeast } from './sdk-versions.ts'
import { FunctionIndex, type SectionContext } from './section-context.ts'
import { readIntegrationSlots } from './slots.ts'
import type { AppDeclaration, AppVisibility, Manifest, ManifestResult, ValidationContext } from './types.ts'

export const SCHEMA_VERSION = 3

const APP_VISIBILITIES = ['public', 'private'] as const satisfies readonly AppVisibility[]

/**
 * Validates service.yaml text. Never throws for bad input; throws a TypeError only when
 * `context.platformSdkVersion` is not an x.y.z version (a caller bug).
 *
 * @example
 * const { manifest, errors, warnings } = validateManifest(text, { files, publishedIntegrations })
 * if (manifest === null) for (const e of errors) console.error(`${e.line}:${e.column} ${e.path} ${e.code} ${e.message}`)
 */
export function validateManifest(text: string, context: ValidationContext = {}): ManifestResult {
  const platformSdkVersion = context.platformSdkVersion ?? PLATFORM_SDK_VERSION
  if (parseSdkVersion(platformSdkVersion) === null) {
    throw new TypeError(`platformSdkVersion must be an x.y.z version, got "${platformSdkVersion}"`)
  }
  const parsed = parseManifestYaml(text)
  const problems = new ProblemCollector(parsed.lineCounter)
  for (const issue of parsed.issues) problems.report(issue.code, issue.offset, issue.path, issue.message)
  const manifest = parsed.usable ? readManifest(problems, parsed.root, { context, platformSdkVersion }) : undefined
  const { errors, warnings } = problems.sorted()
  return { manifest: errors.length === 0 && manifest !== undefined ? manifest : null, errors, warnings }
}

function readManifest(
  problems: ProblemCollector,
  root: Node | null,
  options: { context: ValidationContext; platformSdkVersion: string },
): Manifest | undefined {
  if (!isMap(root)) {
    problems.report(
      'MANIFEST_ROOT_NOT_MAPPING',
      root ?? 0,
      '',
      root === null
        ? 'service.yaml is empty; it must be a mapping that starts with "schemaVersion: 3" and declares app and runtime'
        : 'service.yaml must be a mapping of fields (schemaVersion, app, runtime, …), not a list or a single value',
    )
    return undefined
  }
  const fields = readMapping(problems, { node: root, path: '' }, '')
  if (fields === undefined) return undefined
  const schemaVersion = readSchemaVersion(problems, fields)
  const app = readApp(problems, fields)
  const sdkVersion = readSdkVersion(problems, fields, options.platformSdkVersion)
  const secrets = readSecrets(problems, fields)
  const context: SectionContext = {
    problems,
    functions: new FunctionIndex(),
    sdkVersion: sdkVersion.supported,
    schemaVersion: schemaVersion.integer,
    appId: app?.id,
    secretNames: secrets.lines,
    validation: options.context,
  }
  const functions = readFunctions(context, fields)
  const queues = readQueues(context, fields)
  const cron = readCron(context, fields)
  const data = readData(context, fields)
  const integrations = readIntegrationSlots(context, fields)
  const provides = readProvides(context, fields)
  const email = readEmail(context, fields)
  const ai = readAi(context, fields)
  if (
    schemaVersion.integer !== SCHEMA_VERSION || app === undefined || sdkVersion.supported === undefined ||
    secrets.value === undefined || functions === undefined || queues === undefined || cron === undefined ||
    data === undefined || integrations === undefined || provides === 'invalid' || email === 'invalid' || ai === 'invalid'
  ) {
    return undefined
  }
  return {
    schemaVersion: SCHEMA_VERSION,
    app,
    runtime: { sdk: { version: sdkVersion.supported } },
    functions,
    queues,
    cron,
    secrets: secrets.value,
    data,
    integrations,
    ...(provides === undefined ? {} : { provides }),
    ...(email === undefined ? {} : { email }),
    ...(ai === undefined ? {} : { ai }),
  }
}

/** `integer` is the declared integer even when unsupported, for schema-3 feature checks. */
function readSchemaVersion(problems: ProblemCollector, fields: Fields): { integer: number | undefined } {
  const item = member(problems, fields, 'schemaVersion', true)
  if (item === undefined) return { integer: undefined }
  const version = readInteger(problems, item, { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER })
  if (version !== undefined && version !== SCHEMA_VERSION) {
    problems.report(
      'MANIFEST_SCHEMA_VERSION_UNSUPPORTED',
      item.node,
      item.path,
      `schemaVersion ${version} is not supported; this platform reads schemaVersion: 3 (integration contracts and Function routes need it)`,
    )
  }
  return { integer: version }
}

function readApp(problems: ProblemCollector, root: Fields): AppDeclaration | undefined {
  const app = mappingField(problems, root, 'app', { required: true, mapping: 'app' })
  if (app === undefined) return undefined
  const id = stringField(problems, app, 'id', { required: true, ...APP_SLUG })
  const name = stringField(problems, app, 'name', { required: false, maxLength: 80 })
  const visibility = choiceField(problems, app, 'visibility', { required: false, choices: APP_VISIBILITIES })
  if (id === undefined) return undefined
  return { id, ...(name === undefined ? {} : { name }), visibility: visibility ?? 'private' }
}

/** `supported` is the pinned version when it is valid and within what the platform runs. */
function readSdkVersion(problems: ProblemCollector, root: Fields, platformSdkVersion: string): { supported: string | undefined } {
  const runtime = mappingField(problems, root, 'runtime', { required: true, mapping: 'runtime' })
  if (runtime === undefined) return { supported: undefined }
  const sdk = mappingField(problems, runtime, 'sdk', { required: true, mapping: 'runtime.sdk' })
  if (sdk === undefined) return { supported: undefined }
  const item = member(problems, sdk, 'version', true)
  if (item === undefined) return { supported: undefined }
  if (isScalar(item.node) && typeof item.node.value === 'number') {
    problems.report(
      'MANIFEST_SDK_VERSION_INVALID',
      item.node,
      item.path,
      `${item.node.source ?? item.node.value} is not an SDK version; write major.minor.patch such as ${platformSdkVersion}`,
    )
    return { supported: undefined }
  }
  const version = readString(problems, item)
  if (version === undefined) return { supported: undefined }
  if (parseSdkVersion(version) === null) {
    problems.report(
      'MANIFEST_SDK_VERSION_INVALID',
      item.node,
      item.path,
      `"${version}" is not an SDK version; write major.minor.patch such as "${platformSdkVersion}" (no prefix or suffix)`,
    )
    return { supported: undefined }
  }
  if (!sdkAtLeast(version, MINIMUM_SDK_VERSION) || !sdkAtLeast(platformSdkVersion, version)) {
    problems.report(
      'MANIFEST_SDK_VERSION_UNSUPPORTED',
      item.node,
      item.path,
      `SDK ${version} is not supported; pin a version from ${MINIMUM_SDK_VERSION} to ${platformSdkVersion}`,
    )
    return { supported: undefined }
  }
  return { supported: version }
}

/** `lines` maps each declared secret name to its line, for collision messages. */
function readSecrets(
  problems: ProblemCollector,
  root: Fields,
): { value: Record<string, 'required'> | undefined; lines: Map<string, number> } {
  const lines = new Map<string, number>()
  const item = member(problems, root, 'secrets', false)
  if (item === undefined) return { value: {}, lines }
  const secrets = readMapping(problems, item, 'secrets')
  if (secrets === undefined) return { value: undefined, lines }
  const names: string[] = []
  for (const secret of freeMembers(secrets)) {
    if (!SECRET_NAME.pattern.test(secret.name)) {
      problems.report('MANIFEST_INVALID_FORMAT', secret.key, secret.path, `"${secret.name}" is not a valid secret name: ${SECRET_NAME.format}`)
    } else {
      lines.set(secret.name, problems.lineOf(secret.key))
      names.push(secret.name)
    }
    readSecretRequirement(problems, secret)
  }
  return { value: Object.fromEntries(names.map((name) => [name, 'required' as const])), lines }
}

/** The only value a secret takes is the string "required". */
function readSecretRequirement(problems: ProblemCollector, secret: { name: string; key: Node; path: string; item: Item | undefined }): void {
  const { name, item } = secret
  if (item === undefined) {
    problems.report('MANIFEST_MISSING_FIELD', secret.key, secret.path, `the secret "${name}" has no value; write "${name}: required"`)
    return
  }
  const value = readString(problems, item)
  if (value !== undefined && value !== 'required') {
    problems.report(
      'MANIFEST_INVALID_CHOICE',
      item.node,
      item.path,
      `"${value}" is not allowed; declare the secret as "${name}: required" (its value is provisioned separately, never in service.yaml)`,
    )
  }
}
