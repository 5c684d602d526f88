/**
 * The realtime protocol's parsing of client frames (pure): what a join, broadcast and
 * presence frame become, and the refusals a malformed one gets, with its ref when usable.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { parseClientMessage, parseFilter, ProtocolError } from './protocol.ts'
import { closeCodeFor } from './authority.ts'

function refusal(text: string): ProtocolError {
  try {
    parseClientMessage(text)
  } catch (error) {
    assert.ok(error instanceof ProtocolError)
    return error
  }
  assert.fail(`accepted: ${text}`)
}

describe('realtime protocol', () => {
  test('a join names its channel, privacy, self-broadcast, change subscriptions with ids, and a resume position', () => {
    const join = parseClientMessage(JSON.stringify({
      type: 'join', ref: 7, channel: 'list:4', resume: 12,
      config: { private: true, broadcast: { self: true }, changes: [{ event: '*', table: 'items', filter: 'list_id=eq.4' }, { id: 'gone', event: 'delete', table: 'items' }] },
    }))
    assert.equal(join.type, 'join')
    if (join.type !== 'join') return
    assert.equal(join.ref, '7')
    assert.equal(join.resume, 12)
    assert.equal(join.config.private, true)
    assert.equal(join.config.broadcastSelf, true)
    assert.deepEqual(join.config.changes.map((c) => ({ ...c, events: [...c.events] })), [
      { id: '0', events: ['insert', 'update', 'delete'], table: 'items', filter: { column: 'list_id', value: '4' } },
      { id: 'gone', events: ['delete'], table: 'items', filter: null },
    ])
    const bare = parseClientMessage('{"type":"join","ref":"1","channel":"room"}')
    assert.deepEqual(bare, { type: 'join', ref: '1', channel: 'room', config: { private: false, broadcastSelf: false, changes: [] }, resume: null })
  })

  test('filters are equality only, on a plain column name; the value is kept as written', () => {
    assert.deepEqual(parseFilter('title=eq.a=b.c'), { column: 'title', value: 'a=b.c' })
    for (const bad of ['list_id=gt.4', 'list_id', 'x y=eq.1', '"x"=eq.1']) assert.throws(() => parseFilter(bad), ProtocolError)
  })

  test('malformed frames are refused with what is wrong, keeping a usable ref', () => {
    assert.match(refusal('not json').message, /one JSON object/)
    assert.match(refusal('[1]').message, /one JSON object/)
    assert.match(refusal('{"type":"shout"}').message, /type must be/)
    const noChannel = refusal('{"type":"join","ref":"r1","channel":"has space"}')
    assert.equal(noChannel.ref, 'r1')
    assert.match(refusal('{"type":"join","channel":"c","config":{"changes":[{"table":"x;drop"}]}}').message, /plain identifier/)
    assert.match(refusal('{"type":"join","channel":"c","config":{"changes":[{"table":"t","event":"upsert"}]}}').message, /insert, update, delete/)
    assert.match(refusal('{"type":"join","channel":"c","config":{"changes":[{"id":"a","table":"t"},{"id":"a","table":"t"}]}}').message, /distinct/)
    assert.match(refusal('{"type":"join","channel":"c","resume":-1}').message, /change position/)
    assert.match(refusal('{"type":"broadcast","channel":"c"}').message, /event/)
    assert.match(refusal('{"type":"track","channel":"c","state":[1]}').message, /state must be an object/)
    assert.match(refusal(JSON.stringify({ type: 'ping', ref: 'x'.repeat(65) })).message, /ref/)
  })

  test('a re-checked handshake\'s refusal maps to its close code; a passing failure keeps the socket', () => {
    assert.equal(closeCodeFor({ status: 401, code: 'AUTH_REQUIRED' }), 4401)
    assert.equal(closeCodeFor({ status: 403, code: 'ACCESS_DENIED' }), 4403)
    assert.equal(closeCodeFor({ status: 404, code: 'APP_NOT_FOUND' }), 4404)
    assert.equal(closeCodeFor({ status: 503, code: 'APP_NOT_ACTIVE' }), 4503)
    assert.equal(closeCodeFor({ status: 503, code: 'AUTH_UNAVAILABLE' }), null)
    assert.equal(closeCodeFor({ status: 500, code: 'INTERNAL_ERROR' }), null)
  })
})
