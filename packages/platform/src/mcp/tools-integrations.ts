/**
 * Organisation integrations (spec 4.5): published contracts, event deliveries, and a
 * development session's integration mode, test connection and injected events. Each calls
 * the function of the matching owner API route, with Edit on the app (the test connection:
 * Edit on the provider app, checked by setDevTestConnection).
 */
import { z } from 'zod'
import { appForRole } from '../identity/index.ts'
import { checkDevName } from '../namespaces/dev-names.ts'
import { listCustomIntegrations } from '../integrations/index.ts'
import { listAppDeliveries } from '../integrations/events/index.ts'
import { injectDevEvent, setDevMode, setDevTestConnection } from '../integrations/dev/index.ts'
import { BUILDER, defineTool, FULL_ONLY, type ToolContext, type ToolDefinition } from './tool.ts'
import { personOnApp } from './scope.ts'
import { appId } from './fields.ts'

const session = z.string().min(1).max(12).describe('The development session (namespace) name, e.g. "alice"')
const integrationName = z.string().min(1).max(64).describe('The consumer slot or provided integration name in service.yaml')

async function devTarget(context: ToolContext, input: { appId: string; sessionId: string }) {
  const user = await personOnApp(context, input.appId)
  const app = await appForRole(context.deps.db, user, input.appId, 'edit')
  return { user, app, devName: checkDevName(input.sessionId) }
}

export const integrationTools: ToolDefinition[] = [
  defineTool({
    name: 'list_custom_integrations',
    description: 'Published integration contracts of the app\'s organisation that you may use (their operations, capabilities and ' +
      'event types), paginated by name: limit 1 to 100, nextCursor from a previous page. Needs Edit on the app.',
    input: z.object({ appId, limit: z.number().int().min(1).max(100).optional(), nextCursor: z.string().max(500).optional() }).strict(),
    surfaces: BUILDER,
    readOnly: true,
    async run(context, input) {
      const user = await personOnApp(context, input.appId)
      return listCustomIntegrations(context.deps.db, {
        user, appId: input.appId, query: { limit: input.limit === undefined ? undefined : String(input.limit), nextCursor: input.nextCursor },
      })
    },
  }),
  defineTool({
    name: 'list_integration_event_deliveries',
    description: 'Recent integration event deliveries to the app, newest first: type, slot, state, attempts and last error, never ' +
      'the payload. state: waiting, running, delivered or failed; limit 1 to 100 (default 50). Needs Edit on the app.',
    input: z.object({
      appId,
      state: z.enum(['waiting', 'running', 'delivered', 'failed']).optional(),
      limit: z.number().int().min(1).max(100).optional(),
      nextCursor: z.string().max(500).optional(),
    }).strict(),
    // Production diagnostics (spec 4.5): not on the focused builder surface.
    surfaces: FULL_ONLY,
    readOnly: true,
    async run(context, input) {
      const user = await personOnApp(context, input.appId)
      return listAppDeliveries(context.deps.db, { user, appId: input.appId, query: { limit: input.limit, state: input.state, nextCursor: input.nextCursor } })
    },
  }),
  defineTool({
    name: 'set_dev_integration_mode',
    description: 'In a development session, answer the consumer slot integrationName with its declared fakes ("fake") or call the ' +
      'provider on a real connection ("live"). Needs Edit on the app.',
    input: z.object({ appId, sessionId: session, integrationName, mode: z.enum(['live', 'fake']) }).strict(),
    surfaces: BUILDER,
    readOnly: false,
    async run(context, input) {
      const { user, app, devName } = await devTarget(context, input)
      return { integration: await setDevMode(context.deps, { actor: user, app, devName, integration: input.integrationName, mode: input.mode }) }
    },
  }),
  defineTool({
    name: 'inject_dev_integration_event',
    description: 'Deliver an integration event of type `type` to the development session\'s handlers of the slot integrationName, ' +
      'as the provider would; data defaults to the event\'s declared fake payload. Needs Edit on the app.',
    input: z.object({
      appId, sessionId: session, integrationName,
      type: z.string().min(1).max(128),
      data: z.record(z.string(), z.unknown()).optional(),
    }).strict(),
    surfaces: BUILDER,
    readOnly: false,
    async run(context, input) {
      const { app, devName } = await devTarget(context, input)
      return injectDevEvent({ db: context.deps.db, clock: context.deps.clock, host: context.deps.host }, {
        app, devName, integration: input.integrationName, type: input.type, ...(input.data === undefined ? {} : { data: input.data }),
      })
    },
  }),
  defineTool({
    name: 'set_dev_integration_test_connection',
    description: 'Choose the connection a provider app\'s development session runs its integration integrationName\'s operation, ' +
      'sync and webhook Functions on (connectionId), or none (null). Needs Edit on the provider app.',
    input: z.object({ appId, sessionId: session, integrationName, connectionId: z.string().min(1).max(64).nullable() }).strict(),
    surfaces: BUILDER,
    readOnly: false,
    async run(context, input) {
      const { user, app, devName } = await devTarget(context, input)
      return {
        integration: await setDevTestConnection(context.deps, { actor: user, app, devName, integration: input.integrationName, connectionId: input.connectionId }),
      }
    },
  }),
]
