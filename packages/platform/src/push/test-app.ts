/**
 * Test support for web push: an app whose `notify` Function (public) sends the notification a
 * test gives (as JSON text, so any shape reaches `ctx.notifications.send`) and answers the
 * result, or `{ error, details }` with the error's code.
 */
import { bundle, manifest } from '../../test/harness.ts'

const FUNCTIONS_YAML = `functions:
  - name: notify
    entrypoint: functions/notify.ts
    access: public
`

const NOTIFY = `
import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ notification: string() }),
  async handler({ input, notifications }) {
    try {
      return await notifications.send(JSON.parse(input.notification))
    } catch (error) {
      return { error: error.code ?? String(error.message), details: error.details ?? null }
    }
  },
})`

/** The app's bundle: the notify Function and a page that loads the SDK. */
export function pushBundle(slug: string, visibility: 'public' | 'private' = 'public') {
  return bundle({
    'service.yaml': manifest(slug, FUNCTIONS_YAML, visibility),
    'functions/notify.ts': NOTIFY,
    'public/index.html': `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${slug}</title>
<script src="/_service/sdk.js"></script></head><body><h1>${slug}</h1></body></html>`,
  })
}
