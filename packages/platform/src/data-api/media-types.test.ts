import assert from 'node:assert/strict'
import { test } from 'node:test'
import { negotiate } from './media-types.ts'

test('JSON arrays by default and for */*, application/* and application/json', () => {
  for (const accept of [null, '', '*/*', 'application/*', 'application/json', 'application/json; charset=utf-8']) {
    assert.equal(negotiate(accept).single, false, String(accept))
  }
})

test('single objects and stripped nulls through the vnd.pgrst types', () => {
  assert.deepEqual(negotiate('application/vnd.pgrst.object+json'), {
    single: true, stripNulls: false, contentType: 'application/vnd.pgrst.object+json; charset=utf-8',
  })
  assert.equal(negotiate('application/vnd.pgrst.object+json;nulls=stripped').stripNulls, true)
  assert.equal(negotiate('application/vnd.pgrst.array+json;nulls=stripped').single, false)
})

test('the first acceptable type by quality wins; unacceptable ones are PGRST107', () => {
  assert.equal(negotiate('text/html, application/vnd.pgrst.object+json;q=0.5').single, true)
  assert.equal(negotiate('application/vnd.pgrst.object+json;q=0.2, application/json').single, false)
  assert.throws(() => negotiate('text/csv'), { code: 'PGRST107', status: 406 })
  assert.throws(() => negotiate('application/json;q=0'), { code: 'PGRST107' })
})
