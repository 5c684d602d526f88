/**
 * The MCP server of one request, on the official SDK's low-level `Server`: tools/list shows
 * the tools of the caller's surface with their strict input schemas (JSON Schema with
 * `additionalProperties: false`), and tools/call validates the arguments, runs the tool and
 * answers its result as JSON text plus `structuredContent`. A failure is a tool error
 * (`isError: true`) whose content is the platform's error body, `{"error": {code, message,
 * details?}}`; unknown errors are logged and answered as INTERNAL_ERROR, never their text.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { ServiceError, toErrorBody } from '../lib/errors.ts'
import { PLATFORM_SDK_VERSION } from '../manifest/index.ts'
import { surfaceOf } from './principal.ts'
import type { ToolContext, ToolDefinition } from './tool.ts'
import { TOOLS } from './tools.ts'

const INSTRUCTIONS = 'Build and ship apps on this platform: create_app, validate_app and deploy_app a bundle (service.yaml, ' +
  'functions/, public/, database/migrations/), then invoke_dev_function and read_logs in a development session. Without an ' +
  'account, start_onboarding a person by email. Errors carry the platform\'s code in {"error": {"code", "message"}}.'

/** Listings made so far: a tool's JSON Schema is derived once, on its first tools/list. */
const listings = new WeakMap<ToolDefinition, Tool>()

/** A tool's listing: name, description, JSON Schema of its input, hints. */
function listing(tool: ToolDefinition): Tool {
  const known = listings.get(tool)
  if (known !== undefined) return known
  const { $schema: _ignored, ...schema } = z.toJSONSchema(tool.input, { io: 'input' }) as Record<string, unknown>
  const made: Tool = {
    name: tool.name,
    description: tool.description,
    inputSchema: schema as Tool['inputSchema'],
    annotations: { readOnlyHint: tool.readOnly, destructiveHint: false, openWorldHint: false },
  }
  listings.set(tool, made)
  return made
}

function success(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value }
}

/** A tool error carrying the platform's code, as the HTTP API renders it. */
export function toolError(error: unknown): CallToolResult {
  const { body } = toErrorBody(error)
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body as unknown as Record<string, unknown> }
}

function invalidInput(tool: string, error: z.ZodError): ServiceError {
  const issues = error.issues.slice(0, 20).map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }))
  const first = issues[0]
  return new ServiceError('VALIDATION_FAILED',
    `invalid input for ${tool}${first ? `: ${first.path === '' ? '' : `${first.path}: `}${first.message}` : ''}`, { details: { issues } })
}

/**
 * An SDK server for one request of `context.principal`.
 *
 * @example
 * const server = createMcpServer(context)
 * await server.connect(transport)
 */
export function createMcpServer(context: ToolContext): Server {
  const surface = surfaceOf(context.principal)
  const visible = TOOLS.filter((tool) => tool.surfaces.includes(surface))
  const server = new Server({ name: 'service-platform', version: PLATFORM_SDK_VERSION }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: visible.map(listing) }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const name = request.params.name
    const tool = TOOLS.find((candidate) => candidate.name === name)
    if (tool === undefined) return toolError(new ServiceError('NOT_FOUND', `no tool "${name.slice(0, 64)}"; tools/list names them`))
    if (!tool.surfaces.includes(surface)) {
      return toolError(surface === 'anonymous'
        ? new ServiceError('UNAUTHENTICATED', `${name} needs an access token: connect with OAuth or an owner API token`)
        : new ServiceError('TOOL_NOT_AVAILABLE', `${name} is not on the focused builder surface of an app-scoped token`, { details: { tool: name, surface } }))
    }
    const parsed = tool.input.safeParse(request.params.arguments ?? {})
    if (!parsed.success) return toolError(invalidInput(name, parsed.error))
    try {
      return success(await tool.run(context, parsed.data))
    } catch (error) {
      if (!(error instanceof ServiceError) || error.status >= 500) {
        context.deps.logger[error instanceof ServiceError ? 'warn' : 'error']('mcp tool failed', {
          tool: name, code: error instanceof ServiceError ? error.code : 'INTERNAL_ERROR', error: error instanceof Error ? error.message : String(error),
        })
      }
      return toolError(error)
    }
  })
  return server
}
