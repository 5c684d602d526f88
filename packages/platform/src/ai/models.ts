/**
 * Which provider model a `ctx.ai` call uses: the release's own choice (`ai.textModel`,
 * `ai.imageModel` in service.yaml) when it names one, else the operator's default
 * (AI_TEXT_MODEL, AI_IMAGE_MODEL). An app may only name a model the operator allows: the
 * default or one listed in AI_TEXT_MODELS / AI_IMAGE_MODELS. A deploy naming another is
 * refused, and every call checks again, since the operator's lists can change after a deploy.
 */
import type { AiSettings } from '../config.ts'
import { first, type Queryable } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import type { AiDeclaration } from '../manifest/index.ts'

export type ModelKind = 'text' | 'image'

const FIELDS = { text: 'ai.textModel', image: 'ai.imageModel' } as const
const LISTS = { text: 'AI_TEXT_MODELS', image: 'AI_IMAGE_MODELS' } as const
const DEFAULTS = { text: 'AI_TEXT_MODEL', image: 'AI_IMAGE_MODEL' } as const

/** The models an app may name for `kind`: the default first, then the listed ones. */
export function allowedModels(settings: AiSettings, kind: ModelKind): string[] {
  const fallback = kind === 'text' ? settings.textModel : settings.imageModel
  const listed = (kind === 'text' ? settings.textModels : settings.imageModels) ?? []
  return [...new Set([...(fallback === null ? [] : [fallback]), ...listed])]
}

/**
 * Refuses a model the operator does not allow, with AI_MODEL_NOT_ALLOWED naming the manifest
 * field, the model and the allowed ones.
 *
 * @example
 * checkModelChoice(settings, { kind: 'text', model: 'gpt-4o' }) // throws unless AI_TEXT_MODEL or AI_TEXT_MODELS names it
 */
export function checkModelChoice(settings: AiSettings, input: { kind: ModelKind; model: string }): void {
  const allowed = allowedModels(settings, input.kind)
  if (allowed.includes(input.model)) return
  const field = FIELDS[input.kind]
  throw new ServiceError('AI_MODEL_NOT_ALLOWED',
    `${field} names "${input.model}", which this platform does not offer; ` +
    (allowed.length === 0
      ? `it offers no ${input.kind} models: the operator sets ${DEFAULTS[input.kind]} and ${LISTS[input.kind]}`
      : `choose one of ${allowed.map((m) => `"${m}"`).join(', ')} (the operator lists them in ${LISTS[input.kind]})`),
    { details: { field, model: input.model, allowed } })
}

/** Refuses a release whose `ai` section names a model the operator does not allow. */
export function checkAiDeclaration(settings: AiSettings, declaration: AiDeclaration | undefined): void {
  if (declaration?.textModel !== undefined) checkModelChoice(settings, { kind: 'text', model: declaration.textModel })
  if (declaration?.imageModel !== undefined) checkModelChoice(settings, { kind: 'image', model: declaration.imageModel })
}

/** The model a call uses: the release's choice (checked against the lists) or the default (null: none set). */
export function modelFor(settings: AiSettings, input: { kind: ModelKind; choice: AiDeclaration | undefined }): string | null {
  const chosen = input.kind === 'text' ? input.choice?.textModel : input.choice?.imageModel
  if (chosen === undefined) return input.kind === 'text' ? settings.textModel : settings.imageModel
  checkModelChoice(settings, { kind: input.kind, model: chosen })
  return chosen
}

/**
 * A release's `ai` section, read once per release (a release's manifest never changes), at
 * most `maxEntries` remembered.
 */
export function createReleaseModels(db: Queryable, options: { maxEntries?: number } = {}): (releaseId: string) => Promise<AiDeclaration | undefined> {
  const maxEntries = options.maxEntries ?? 1000
  const known = new Map<string, AiDeclaration | undefined>()
  return async (releaseId) => {
    if (known.has(releaseId)) return known.get(releaseId)
    const row = await first<{ ai: AiDeclaration | null }>(db, `select manifest -> 'ai' as ai from platform.releases where id = $1`, [releaseId])
    const declaration = row?.ai ?? undefined
    if (known.size >= maxEntries) known.delete(known.keys().next().value!)
    known.set(releaseId, declaration)
    return declaration
  }
}
