/**
 * `invoke_dev_function` (spec 4.5): runs a Function of a development session, as the owner
 * API's development invocation does (the same function, Edit on the app).
 */
import { z } from 'zod'
import { invokeDevFunction } from '../functions/index.ts'
import { BUILDER, defineTool, type ToolDefinition } from './tool.ts'
import { personOnApp } from './scope.ts'
import { appId } from './fields.ts'

export const devTools: ToolDefinition[] = [
  defineTool({
    name: 'invoke_dev_function',
    description: 'Invoke the Function functionName of a development session\'s active release with `input` (default {}), as you ' +
      '(as: "owner", the default) or without a user ("anonymous": a Function with access: user then answers ' +
      'status 401 AUTH_REQUIRED without running); system Functions too. Answers {ok: true, value} or ' +
      '{ok: false, status, error} with the requestId and the invocation\'s log lines. Needs Edit on the app.',
    input: z.object({
      appId,
      sessionId: z.string().min(1).max(12).describe('The development session (namespace) name, e.g. "alice"'),
      functionName: z.string().min(1).max(64),
      input: z.unknown().optional(),
      as: z.enum(['owner', 'anonymous']).optional(),
    }).strict(),
    surfaces: BUILDER,
    readOnly: false,
    async run(context, input) {
      const user = await personOnApp(context, input.appId)
      const { host, devInvoke, db } = context.deps
      return invokeDevFunction({ db, host, ...(devInvoke === undefined ? {} : { integrations: devInvoke }) }, {
        user, appId: input.appId, devName: input.sessionId, name: input.functionName,
        ...(input.input === undefined ? {} : { input: input.input }), as: input.as,
      })
    },
  }),
]
