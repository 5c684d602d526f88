/**
 * The AI feature's public surface: `createAi` answers `ctx.ai` calls for the Functions host
 * (ai.ts), against the OpenAI-compatible provider the AI_* settings name (provider.ts), with
 * attachments checked by attachments.ts.
 */
export { createAi, MAX_PROMPT_CHARS, type Ai, type AiContextCall, type AiDeps, type ReadFileInput } from './ai.ts'
export { ATTACHMENT_LIMITS, type ManagedFileBytes } from './attachments.ts'
export { checkAiDeclaration, createReleaseModels } from './models.ts'
