// `provides.integration.authorization`: the OAuth 2.0 authorization-code declaration of
// a provider contract. The platform runs the browser redirect; the provider's system
// Functions exchange and refresh tokens; operation, sync and webhook Functions read the
// access token as the secret named by `accessToken`.

import { SECRET_NAME } from './names.ts'
import {
  booleanField,
  choiceField,
  member,
  readMapping,
  readString,
  stringField,
  stringListField,
  type Fields,
  type Item,
} from './read-fields.ts'
import { fieldPath } from './problems.ts'
import { systemFunctionField, type SectionContext } from './section-context.ts'
import type { OAuth2Authorization } from './types.ts'

export const DEFAULT_ACCESS_TOKEN_SECRET = 'OAUTH_ACCESS_TOKEN'

/** RFC 6749 scope-token characters: printable ASCII except space, '"' and '\'. */
const SCOPE_TOKEN = {
  pattern: /^[\x21\x23-\x5B\x5D-\x7E]+$/,
  format: 'an OAuth scope is one token without spaces, quotes or backslashes (list several scopes as separate entries)',
}

/** Reads `authorization`; `credentialNames` are the contract's credentials (name -> line). */
export function readAuthorization(
  context: SectionContext,
  item: Item,
  credentialNames: ReadonlyMap<string, number>,
): OAuth2Authorization | undefined {
  const { problems } = context
  const fields = readMapping(problems, item, 'provides.integration.authorization')
  if (fields === undefined) return undefined
  const type = choiceField(problems, fields, 'type', { required: true, choices: ['oauth2'] })
  const authorizationUrl = readAuthorizationUrl(context, fields)
  const clientId = stringField(problems, fields, 'clientId', { required: true })
  const scopes = stringListField(problems, fields, 'scopes', { required: true, ...SCOPE_TOKEN })
  const exchange = systemFunctionField(context, fields, 'exchange', { required: true, role: 'the OAuth exchange Function' })
  const refreshGiven = member(problems, fields, 'refresh', false) !== undefined
  const refresh = systemFunctionField(context, fields, 'refresh', { required: false, role: 'the OAuth refresh Function' })
  const pkce = booleanField(problems, fields, 'pkce')
  const accessToken = readAccessToken(context, fields, credentialNames)
  if (
    type === undefined || authorizationUrl === undefined || clientId === undefined || scopes === undefined ||
    exchange === undefined || (refreshGiven && refresh === undefined) || accessToken === undefined
  ) {
    return undefined
  }
  return {
    type,
    authorizationUrl,
    clientId,
    scopes,
    exchange,
    ...(refresh === undefined ? {} : { refresh }),
    pkce: pkce ?? true,
    accessToken,
  }
}

function readAuthorizationUrl(context: SectionContext, fields: Fields): string | undefined {
  const item = member(context.problems, fields, 'authorizationUrl', true)
  if (item === undefined) return undefined
  const url = readString(context.problems, item)
  if (url === undefined) return undefined
  const problem = authorizationUrlProblem(url)
  if (problem === null) return url
  context.problems.report('MANIFEST_AUTHORIZATION_URL_INVALID', item.node, item.path, problem)
  return undefined
}

/**
 * Why an authorization URL is unusable, or null. It must be absolute https; http is
 * accepted for localhost, *.localhost and 127.0.0.1 so providers can be developed locally. RFC 6749
 * 3.1 forbids a fragment.
 *
 * @example
 * authorizationUrlProblem('https://login.example.com/oauth/authorize') // null
 */
export function authorizationUrlProblem(text: string): string | null {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return `"${text}" is not an absolute URL; write it like "https://login.example.com/oauth/authorize"`
  }
  // `*.localhost` is loopback too (RFC 6761): a local platform's own apps live there.
  if (url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname.endsWith('.localhost') || url.hostname === '127.0.0.1')) {
    return url.hash === '' ? null : `"${text}" must not contain a "#" fragment`
  }
  if (url.protocol !== 'https:') {
    return `"${text}" must use https (http is accepted only for localhost, *.localhost and 127.0.0.1)`
  }
  if (url.hash !== '') return `"${text}" must not contain a "#" fragment`
  return null
}

/** The access-token secret name, explicit or the default; it must not collide. */
function readAccessToken(
  context: SectionContext,
  fields: Fields,
  credentialNames: ReadonlyMap<string, number>,
): string | undefined {
  const { problems } = context
  const item = member(problems, fields, 'accessToken', false)
  const name = item === undefined ? DEFAULT_ACCESS_TOKEN_SECRET : readString(problems, item, SECRET_NAME)
  if (name === undefined) return undefined
  const at = item ?? { node: fields.node, path: fieldPath(fields.path, 'accessToken') }
  const explained = item === undefined ? `the default access-token name ${name}` : `accessToken "${name}"`
  const credentialLine = credentialNames.get(name)
  if (credentialLine !== undefined) {
    problems.report('MANIFEST_SECRET_NAME_CONFLICT', at.node, at.path, `${explained} is also the name of the credential at line ${credentialLine}; set authorization.accessToken to a different name or rename the credential`)
    return undefined
  }
  const secretLine = context.secretNames.get(name)
  if (secretLine !== undefined) {
    problems.report('MANIFEST_SECRET_NAME_CONFLICT', at.node, at.path, `${explained} is also an app secret (secrets.${name} at line ${secretLine}); set authorization.accessToken to a different name or rename the secret`)
    return undefined
  }
  return name
}
