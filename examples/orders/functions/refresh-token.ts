// OAuth refresh: a refresh token this app signed gets new tokens; anything else is
// unauthorized, which makes the connection "Reconnect required".
import { defineFunction, errors, object, string } from '@service/server'
import { CLIENT_SECRET, isRefreshToken, issueTokens } from './demo-oauth.ts'

export default defineFunction({
  input: object({ refreshToken: string() }),
  async handler({ input, secrets }) {
    const secret = await secrets.require(CLIENT_SECRET)
    if (!(await isRefreshToken(secret, input.refreshToken))) {
      throw errors.unauthorized('INVALID_GRANT', 'The refresh token is not valid; reconnect')
    }
    return issueTokens(secret)
  },
})
