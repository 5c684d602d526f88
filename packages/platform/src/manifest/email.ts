// The `email` section: the application aliases `ctx.email.send` may send from (each is
// `<alias>@<app slug>.<EMAIL_DOMAIN>`), and the system Function inbound mail to those
// addresses invokes (spec 2.10 `email`, 6.4; docs/decisions.md "Email").

import { EMAIL_ALIAS } from './names.ts'
import { mappingField, member, stringListField, type Fields } from './read-fields.ts'
import { systemFunctionField, type SectionContext } from './section-context.ts'
import type { EmailDeclaration } from './types.ts'

/** At most this many aliases per app. */
export const MAX_EMAIL_ALIASES = 20

/** Absent `email`: undefined (no aliases, no inbound mail); 'invalid' when it has an error. */
export function readEmail(context: SectionContext, root: Fields): EmailDeclaration | undefined | 'invalid' {
  const { problems } = context
  const at = member(problems, root, 'email', false)
  if (at === undefined) return undefined
  const email = mappingField(problems, root, 'email', { required: false, mapping: 'email' })
  if (email === undefined) return 'invalid'
  const aliasesItem = member(problems, email, 'aliases', false)
  const aliases = stringListField(problems, email, 'aliases', { required: false, maxItems: MAX_EMAIL_ALIASES, ...EMAIL_ALIAS })
  const inboundFields = mappingField(problems, email, 'inbound', { required: false, mapping: 'email.inbound' })
  let inbound: { function: string } | undefined | 'invalid'
  if (inboundFields !== undefined) {
    const receiver = systemFunctionField(context, inboundFields, 'function', { required: true, role: 'an inbound email receiver' })
    inbound = receiver === undefined ? 'invalid' : { function: receiver }
    if (aliasesItem === undefined) {
      // Inbound mail is addressed to an alias: without one there is no address to receive at.
      problems.report(
        'MANIFEST_MISSING_FIELD',
        email.node,
        'email.aliases',
        'email.inbound receives mail sent to the app\'s aliases; declare at least one in email.aliases (such as "aliases: [support]")',
      )
      inbound = 'invalid'
    }
  } else if (member(problems, email, 'inbound', false) !== undefined) {
    inbound = 'invalid'
  }
  if (aliasesItem !== undefined && aliases === undefined) return 'invalid'
  if (inbound === 'invalid') return 'invalid'
  return { aliases: aliases ?? [], ...(inbound === undefined ? {} : { inbound }) }
}
