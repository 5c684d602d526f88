import assert from 'node:assert/strict'
import { test } from 'node:test'
import { contentRange, readRange } from './content-range.ts'

test('Content-Range is first-last/total, * for no rows or a zero total, and */* when uncounted', () => {
  assert.equal(contentRange(0, 4, 5), '0-4/5')
  assert.equal(contentRange(2, 3, null), '2-3/*')
  assert.equal(contentRange(0, -1, 0), '*/0')
  assert.equal(contentRange(1, 0, null), '*/*')
  assert.equal(contentRange(1, 0, 3), '*/3')
})

test('a read is 200 when complete or uncounted, 206 when partial, 416 when it starts past the total', () => {
  assert.deepEqual(readRange({ offset: 0, rows: 5, total: 5 }), { status: 200, header: '0-4/5' })
  assert.deepEqual(readRange({ offset: 0, rows: 2, total: 5 }), { status: 206, header: '0-1/5' })
  assert.deepEqual(readRange({ offset: 3, rows: 2, total: 5 }), { status: 206, header: '3-4/5' })
  assert.deepEqual(readRange({ offset: 5, rows: 0, total: 5 }), { status: 206, header: '*/5' })
  assert.deepEqual(readRange({ offset: 6, rows: 0, total: 5 }), { status: 416, header: '*/5' })
  assert.deepEqual(readRange({ offset: 9, rows: 0, total: null }), { status: 200, header: '*/*' })
  assert.deepEqual(readRange({ offset: 0, rows: 0, total: 0 }), { status: 200, header: '*/0' })
})
