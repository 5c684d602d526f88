/**
 * Test support for app email: an app that declares aliases and (optionally) an inbound
 * receiver, a public `send` Function that calls `ctx.email.send` with the message a test
 * gives (as JSON text), and a system `receive` Function that records every inbound event it
 * gets in its own table (with the bytes of each attachment read back through `ctx.files`)
 * and then behaves as the subject says ("unavailable", "bad" or "throw" fail).
 */
import { bundle, manifest } from '../../test/harness.ts'

const SEND = `
import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ message: string() }),
  async handler({ input, email }) {
    return await email.send(JSON.parse(input.message))
  },
})`

const RECEIVE = `
import { array, defineFunction, errors, nullable, number, object, string } from '@service/server'
export default defineFunction({
  input: object({
    id: string(), receivedAt: string(), from: string(), to: array(string()), recipients: array(string()), subject: string(),
    text: nullable(string()), html: nullable(string()), headers: array(object({ name: string(), value: string() })),
    attachments: array(object({ file: string(), name: string(), contentType: string(), size: number() })),
  }),
  async handler({ input, data, files, job, environment }) {
    const contents = []
    for (const attachment of input.attachments) {
      const { data: bytes } = await files.download(attachment.file)
      contents.push(Array.from(bytes).map((b) => b.toString(16).padStart(2, '0')).join(''))
    }
    await data.table('received').create({ inbound_id: input.id, event: input, contents, environment, has_job: job !== null })
    if (input.subject === 'unavailable') throw errors.unavailable('MAILBOX_BUSY', 'Try again later')
    if (input.subject === 'bad') throw errors.badRequest('BAD_MAIL', 'This mail is refused')
    if (input.subject === 'throw') throw new Error('boom')
    return { stored: input.id }
  },
})`

const MIGRATION = `
create table received (
  id uuid primary key default gen_random_uuid(),
  inbound_id text not null,
  event jsonb not null,
  contents jsonb not null,
  environment text not null,
  has_job boolean not null,
  created_at timestamptz not null default clock_timestamp()
);
alter table received enable row level security;
create policy received_system on received for all using (auth.is_system()) with check (auth.is_system());
`

/** The manifest's Functions and email section; `inbound: false` leaves out the receiver. */
export function emailYaml(options: { aliases?: readonly string[]; inbound?: boolean } = {}): string {
  const aliases = options.aliases ?? ['support', 'no-reply']
  return `functions:
  - name: send
    entrypoint: functions/send.ts
    access: public
  - name: receive
    entrypoint: functions/receive.ts
    access: system
${aliases.length === 0 && options.inbound === false ? '' : `email:
  aliases: [${aliases.join(', ')}]
${options.inbound === false ? '' : `  inbound:
    function: receive
`}`}`
}

/** The app's files as text, by bundle path. */
export function emailAppFiles(slug: string, options: { aliases?: readonly string[]; inbound?: boolean } = {}): Record<string, string> {
  return {
    'service.yaml': manifest(slug, emailYaml(options)),
    'functions/send.ts': SEND,
    'functions/receive.ts': RECEIVE,
    'database/migrations/0001_received.sql': MIGRATION,
  }
}

/** The app bundle. */
export function emailBundle(slug: string, options: { aliases?: readonly string[]; inbound?: boolean } = {}) {
  return bundle(emailAppFiles(slug, options))
}
