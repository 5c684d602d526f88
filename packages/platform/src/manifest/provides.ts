// `provides.integration` (spec 2.6): the contract a provider app publishes to the other
// apps of its organisation. Reads identity (name, title, description), the credential
// fields people fill in, OAuth authorization, capabilities, operations, and the SDK
// 2.6 features sync, webhook and events, checking every Function and capability reference.

import { CAPABILITY_NAME, INTEGRATION_NAME, SECRET_NAME } from './names.ts'
import { readAuthorization } from './provides-authorization.ts'
import { readEvents, readOperations } from './provides-operations.ts'
import {
  arrayField,
  booleanField,
  mappingField,
  member,
  readArray,
  readMapping,
  readString,
  stringField,
  type Fields,
  type Item,
} from './read-fields.ts'
import { scheduleField, timezoneField } from './schedule-fields.ts'
import {
  reportDuplicateNames,
  requireSchemaVersion3,
  requireSdk,
  systemFunctionField,
  type SectionContext,
} from './section-context.ts'
import type { IntegrationCapability, IntegrationContract, IntegrationCredential, IntegrationSync } from './types.ts'

export const MAX_CREDENTIALS = 20

type Reading<T> = T | undefined | 'invalid'

/** Reads `provides`; undefined when absent, 'invalid' after reporting problems. */
export function readProvides(context: SectionContext, root: Fields): Reading<{ integration: IntegrationContract }> {
  const item = member(context.problems, root, 'provides', false)
  if (item === undefined) return undefined
  requireSchemaVersion3(context, item, 'integration contracts (provides)')
  const provides = readMapping(context.problems, item, 'provides')
  if (provides === undefined) return 'invalid'
  const contract = mappingField(context.problems, provides, 'integration', { required: true, mapping: 'provides.integration' })
  if (contract === undefined) return 'invalid'
  const integration = readContract(context, contract)
  return integration === undefined ? 'invalid' : { integration }
}

function readContract(context: SectionContext, fields: Fields): IntegrationContract | undefined {
  const { problems } = context
  const name = readContractName(context, fields)
  const title = stringField(problems, fields, 'title', { required: true })
  const description = stringField(problems, fields, 'description', { required: true })
  const credentials = readCredentials(context, fields)
  const authorizationItem = member(problems, fields, 'authorization', false)
  const authorization = authorizationItem === undefined
    ? undefined
    : (readAuthorization(context, authorizationItem, credentials.names) ?? 'invalid')
  const capabilities = readCapabilities(context, fields)
  const operationItems = arrayField(problems, fields, 'operations', { required: false })
  const operations = readOperations(context, operationItems ?? [], capabilities.names)
  const sync = readSync(context, fields)
  const webhook = readWebhook(context, fields)
  const eventItems = readEventItems(context, fields)
  const events = readEvents(context, eventItems ?? [], capabilities.names)
  if (
    name === undefined || title === undefined || description === undefined || credentials.list === undefined ||
    authorization === 'invalid' || capabilities.list === undefined || operations === undefined ||
    sync === 'invalid' || webhook === 'invalid' || events === undefined
  ) {
    return undefined
  }
  return {
    name,
    title,
    description,
    credentials: credentials.list,
    ...(authorization === undefined ? {} : { authorization }),
    capabilities: capabilities.list,
    operations,
    ...(sync === undefined ? {} : { sync }),
    ...(webhook === undefined ? {} : { webhook }),
    events,
  }
}

/** The name must be free: no other active app of the organisation may publish it. */
function readContractName(context: SectionContext, fields: Fields): string | undefined {
  const item = member(context.problems, fields, 'name', true)
  if (item === undefined) return undefined
  const name = readString(context.problems, item, INTEGRATION_NAME)
  if (name === undefined) return undefined
  const publisher = context.validation.publishedIntegrations?.get(name)
  // A redeploy of the publishing app itself is not a conflict.
  if (publisher === undefined || publisher.appSlug === context.appId) return name
  context.problems.report(
    'MANIFEST_INTEGRATION_NAME_TAKEN',
    item.node,
    item.path,
    `the integration name "${name}" is already published by the active app "${publisher.appSlug}"; integration names are unique in the organisation, choose another`,
  )
  return undefined
}

function readCredentials(
  context: SectionContext,
  fields: Fields,
): { list: IntegrationCredential[] | undefined; names: Map<string, number> } {
  const names = new Map<string, number>()
  const item = member(context.problems, fields, 'credentials', false)
  if (item === undefined) return { list: [], names }
  const items = readArray(context.problems, item, { maxItems: MAX_CREDENTIALS })
  if (items === undefined) return { list: undefined, names }
  const list: IntegrationCredential[] = []
  const named: { name: string; item: Item }[] = []
  for (const credentialItem of items) {
    const credential = readCredential(context, credentialItem, named)
    if (credential !== undefined) list.push(credential)
  }
  reportDuplicateNames(context.problems, named, 'credential')
  for (const { name, item: nameItem } of named) if (!names.has(name)) names.set(name, context.problems.lineOf(nameItem.node))
  // Problems inside entries are already reported; the manifest is discarded then.
  return { list, names }
}

function readCredential(context: SectionContext, item: Item, named: { name: string; item: Item }[]): IntegrationCredential | undefined {
  const { problems } = context
  const fields = readMapping(problems, item, 'provides.integration.credentials[]')
  if (fields === undefined) return undefined
  const nameItem = member(problems, fields, 'name', true)
  let name = nameItem === undefined ? undefined : readString(problems, nameItem, SECRET_NAME)
  if (name !== undefined && nameItem !== undefined) {
    named.push({ name, item: nameItem })
    const secretLine = context.secretNames.get(name)
    if (secretLine !== undefined) {
      problems.report(
        'MANIFEST_SECRET_NAME_CONFLICT',
        nameItem.node,
        nameItem.path,
        `"${name}" is also one of this app's own secrets (secrets.${name} at line ${secretLine}); a credential must use a different name`,
      )
      name = undefined
    }
  }
  const label = stringField(problems, fields, 'label', { required: true })
  const secret = booleanField(problems, fields, 'secret')
  const optional = booleanField(problems, fields, 'optional')
  if (name === undefined || label === undefined) return undefined
  return { name, label, secret: secret ?? true, optional: optional ?? false }
}

function readCapabilities(
  context: SectionContext,
  fields: Fields,
): { list: IntegrationCapability[] | undefined; names: Map<string, number> } {
  const { problems } = context
  const names = new Map<string, number>()
  const items = arrayField(problems, fields, 'capabilities', { required: true, minItems: 1 })
  if (items === undefined) return { list: undefined, names }
  const list: IntegrationCapability[] = []
  const named: { name: string; item: Item }[] = []
  for (const item of items) {
    const capability = readCapability(context, item, named)
    if (capability !== undefined) list.push(capability)
  }
  reportDuplicateNames(problems, named, 'capability')
  for (const { name, item } of named) if (!names.has(name)) names.set(name, problems.lineOf(item.node))
  return { list, names }
}

function readCapability(context: SectionContext, item: Item, named: { name: string; item: Item }[]): IntegrationCapability | undefined {
  const { problems } = context
  const fields = readMapping(problems, item, 'provides.integration.capabilities[]')
  if (fields === undefined) return undefined
  const nameItem = member(problems, fields, 'name', true)
  const name = nameItem === undefined ? undefined : readString(problems, nameItem, CAPABILITY_NAME)
  if (name !== undefined && nameItem !== undefined) named.push({ name, item: nameItem })
  const description = stringField(problems, fields, 'description', { required: true })
  if (name === undefined || description === undefined) return undefined
  return { name, description }
}

function readSync(context: SectionContext, fields: Fields): Reading<IntegrationSync> {
  const { problems } = context
  const item = member(problems, fields, 'sync', false)
  if (item === undefined) return undefined
  const gated = requireSdk(context, item, { gate: 'providerSyncWebhookEvents', feature: 'integration sync schedules (sync)' })
  const sync = readMapping(problems, item, 'provides.integration.sync')
  if (sync === undefined) return 'invalid'
  const handler = systemFunctionField(context, sync, 'function', { required: true, role: 'the sync Function' })
  const schedule = scheduleField(problems, sync, 'schedule')
  const timezone = timezoneField(problems, sync, 'timezone')
  if (!gated || handler === undefined || schedule === undefined || timezone === undefined) return 'invalid'
  return { function: handler, schedule, timezone }
}

function readWebhook(context: SectionContext, fields: Fields): Reading<{ function: string }> {
  const { problems } = context
  const item = member(problems, fields, 'webhook', false)
  if (item === undefined) return undefined
  const gated = requireSdk(context, item, { gate: 'providerSyncWebhookEvents', feature: 'integration webhooks (webhook)' })
  const webhook = readMapping(problems, item, 'provides.integration.webhook')
  if (webhook === undefined) return 'invalid'
  const handler = systemFunctionField(context, webhook, 'function', { required: true, role: 'the webhook Function' })
  if (!gated || handler === undefined) return 'invalid'
  return { function: handler }
}

function readEventItems(context: SectionContext, fields: Fields): Item[] | undefined {
  const items = arrayField(context.problems, fields, 'events', { required: false })
  const at = member(context.problems, fields, 'events', false)
  if (items !== undefined && items.length > 0 && at !== undefined) {
    requireSdk(context, at, { gate: 'providerSyncWebhookEvents', feature: 'integration events (events)' })
  }
  return items
}
