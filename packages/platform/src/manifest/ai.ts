// The `ai` section: the provider models an app's `ctx.ai` calls use instead of the operator's
// defaults (AI_TEXT_MODEL, AI_IMAGE_MODEL). The names are the operator's to allow: a deploy
// refuses one that is not on the platform's list (AI_TEXT_MODELS, AI_IMAGE_MODELS), and every
// call checks again (docs/decisions.md, "Per-app AI models").

import { AI_MODEL } from './names.ts'
import { mappingField, member, stringField, type Fields } from './read-fields.ts'
import type { SectionContext } from './section-context.ts'
import type { AiDeclaration } from './types.ts'

/** Absent `ai`: undefined (the operator's defaults); 'invalid' when it has an error. */
export function readAi(context: SectionContext, root: Fields): AiDeclaration | undefined | 'invalid' {
  const { problems } = context
  if (member(problems, root, 'ai', false) === undefined) return undefined
  const ai = mappingField(problems, root, 'ai', { required: false, mapping: 'ai' })
  if (ai === undefined) return 'invalid'
  const given = (key: string) => member(problems, ai, key, false) !== undefined
  const textModel = stringField(problems, ai, 'textModel', { required: false, ...AI_MODEL })
  const imageModel = stringField(problems, ai, 'imageModel', { required: false, ...AI_MODEL })
  if ((given('textModel') && textModel === undefined) || (given('imageModel') && imageModel === undefined)) return 'invalid'
  return {
    ...(textModel === undefined ? {} : { textModel }),
    ...(imageModel === undefined ? {} : { imageModel }),
  }
}
