// The relay's notices between processes are signed (relay.ts): one that does not verify under
// the platform's key is dropped, whatever it says.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { decodeNotice, encodeNotice, type RelayNotice } from './relay.ts'

const key = new Uint8Array(randomBytes(32))
const notice: RelayNotice = { kind: 'broadcast', appId: 'a1', topic: 'a1:private:room', channel: 'room', event: 'msg', payload: { from: 'ann' } }

test('a notice signed with the platform\'s key is read by the other processes, not by its sender', () => {
  const text = encodeNotice(key, 'process-1', notice)!
  assert.deepEqual(decodeNotice(key, 'process-2', text), { p: 'process-1', ...notice })
  assert.equal(decodeNotice(key, 'process-1', text), null, 'a process skips its own notices')
})

test('an unsigned, tampered or foreign-key notice is dropped', () => {
  const forged = JSON.stringify({ p: 'x', ...notice })
  assert.equal(decodeNotice(key, 'process-2', forged), null, 'unsigned (what app SQL can NOTIFY)')
  const text = encodeNotice(key, 'process-1', notice)!
  assert.equal(decodeNotice(key, 'process-2', text.replace('"from":"ann"', '"from":"eve"')), null, 'tampered')
  assert.equal(decodeNotice(new Uint8Array(randomBytes(32)), 'process-2', text), null, 'another platform\'s key')
  assert.equal(decodeNotice(key, 'process-2', `${'0'.repeat(64)}.${forged}`), null, 'a made-up MAC')
  assert.equal(decodeNotice(key, 'process-2', `${text.slice(0, 63)}.${text.slice(65)}`), null, 'a short MAC')
})
