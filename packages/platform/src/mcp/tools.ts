/** Every MCP tool, in the order tools/list shows them. */
import { onboardingTools } from './tools-onboarding.ts'
import { appTools } from './tools-apps.ts'
import { devTools } from './tools-dev.ts'
import { integrationTools } from './tools-integrations.ts'
import { diagnosticTools } from './tools-diagnostics.ts'
import type { ToolDefinition } from './tool.ts'

export const TOOLS: readonly ToolDefinition[] = [...onboardingTools, ...appTools, ...devTools, ...integrationTools, ...diagnosticTools]

/** Tools callable without a credential. */
export const ANONYMOUS_TOOLS: ReadonlySet<string> = new Set(TOOLS.filter((tool) => tool.surfaces.includes('anonymous')).map((tool) => tool.name))
