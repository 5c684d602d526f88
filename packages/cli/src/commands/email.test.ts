// `service email inject`: a synthetic inbound email reaches a development namespace's
// email.inbound receiver through the owner API; the event and the returned value print on
// stdout, a failing receiver exits 1 with its code. Real HTTP, real Deno.
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../platform/test/test-db.ts'
import { emailAppFiles } from '../../../platform/src/email/test-app.ts'
import { capture, startOwnerCli, type OwnerCli } from '../../test/cli-harness.ts'
import { main } from '../main.ts'

const SLUG = 'climail'

describe(`service email inject (${backend})`, () => {
  let cli: OwnerCli

  before(async () => {
    cli = await startOwnerCli(emailAppFiles(SLUG, { aliases: ['support'] }), 'service-cli-email-')
    assert.equal((await cli.h.request('/v1/apps', { token: cli.ownerToken, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    const deployed = await run(['deploy', cli.dir, '--dev', 'ada'])
    assert.equal(deployed.code, 0, deployed.err)
  })
  after(() => cli?.close())

  async function run(args: string[]) {
    const run = capture(cli.env)
    const code = await main(args, run.io)
    return { code, out: run.out.join('\n'), err: run.err.join('\n') }
  }

  test('a composed message with an attachment runs the receiver; the event and its value are printed', async () => {
    const file = join(cli.dir, 'note.txt')
    writeFileSync(file, 'attached ✓')
    const result = await run(['email', 'inject', '--app', SLUG, '--dev', 'ada', '--from', 'bob@example.com', '--to', `support+7@${SLUG}.localhost`,
      '--subject', 'Hello ✓', '--text', 'Body', '--attach', file])
    assert.equal(result.code, 0, result.err)
    const printed = JSON.parse(result.out) as { event: any; value: any }
    assert.equal(printed.event.subject, 'Hello ✓')
    assert.equal(printed.event.from, 'bob@example.com')
    assert.deepEqual(printed.event.recipients, [`support+7@${SLUG}.localhost`])
    assert.deepEqual(printed.event.attachments.map((a: any) => [a.name, a.contentType, a.size]), [['note.txt', 'text/plain', Buffer.byteLength('attached ✓')]])
    assert.equal(printed.value.stored, printed.event.id)
  })

  test('--raw sends a whole message file; --json prints the answer as one line', async () => {
    const file = join(cli.dir, 'mail.eml')
    writeFileSync(file, 'From: cy@example.com\r\nSubject: Raw one\r\n\r\nHi\r\n')
    const result = await run(['email', 'inject', '--app', SLUG, '--dev', 'ada', '--raw', file, '--json'])
    assert.equal(result.code, 0, result.err)
    const answer = JSON.parse(result.out)
    assert.equal(answer.ok, true)
    assert.equal(answer.event.subject, 'Raw one')
  })

  test('a failing receiver exits 1 with its code; without --dev it is a usage error', async () => {
    const failed = await run(['email', 'inject', '--app', SLUG, '--dev', 'ada', '--subject', 'bad', '--text', 'x'])
    assert.equal(failed.code, 1)
    assert.match(failed.err, /BAD_MAIL/)
    const usage = await run(['email', 'inject', '--app', SLUG])
    assert.equal(usage.code, 2)
    assert.match(usage.err, /--dev <name>/)
  })
})
