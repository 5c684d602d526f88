// OAuth exchange: the platform hands over the code from the callback; the demo checks the
// signature, redirect URI and PKCE verifier itself instead of calling a token endpoint.
import { defineFunction, object, string } from '@service/server'
import { checkCode, CLIENT_SECRET, issueTokens } from './demo-oauth.ts'

export default defineFunction({
  input: object({ code: string(), redirectUri: string(), codeVerifier: string() }),
  async handler({ input, secrets }) {
    const secret = await secrets.require(CLIENT_SECRET)
    await checkCode(secret, input)
    return issueTokens(secret)
  },
})
