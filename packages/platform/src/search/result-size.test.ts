/**
 * The answer's size limits on synthetic hits (no database): 16 KiB per record and 1 MiB per
 * response, in UTF-8 bytes of the JSON the caller receives, failing SEARCH_RESULT_TOO_LARGE
 * rather than truncating; and the arithmetic that `limit` ≤ 50 cannot reach 1 MiB today.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ServiceError } from '../lib/errors.ts'
import { MAX_SEARCH_LIMIT } from './input.ts'
import { checkResultSize, MAX_RECORD_BYTES, MAX_RESPONSE_BYTES } from './result-size.ts'
import { CANDIDATES } from './run.ts'

/** A hit whose record is `{"body":"…"}` of exactly `recordBytes` ASCII bytes, with the given evidence. */
function hit(recordBytes: number, evidence: number | null = 0.5, rank: number | null = 1) {
  const body = 'x'.repeat(recordBytes - '{"body":""}'.length)
  return {
    record: { body },
    fullTextScore: evidence, fullTextRank: rank,
    vectorDistance: evidence, vectorSimilarity: evidence, vectorRank: rank,
    fusionScore: evidence,
  }
}

/** What the caller receives, in bytes. */
const responseBytes = (hits: unknown[]) => new TextEncoder().encode(JSON.stringify({ hits })).length

function tooLarge(details: Record<string, unknown>) {
  return (error: unknown) => {
    assert.ok(error instanceof ServiceError, String(error))
    assert.equal(error.code, 'SEARCH_RESULT_TOO_LARGE')
    assert.equal(error.status, 413)
    assert.deepEqual(error.details, details)
    return true
  }
}

test('a record of exactly 16 KiB passes; one byte more fails SEARCH_RESULT_TOO_LARGE naming the hit', () => {
  const hits = [hit(100), hit(MAX_RECORD_BYTES)]
  assert.equal(checkResultSize('notes', hits), hits)
  assert.throws(() => checkResultSize('notes', [hit(100), hit(MAX_RECORD_BYTES + 1)]),
    tooLarge({ search: 'notes', limit: MAX_RECORD_BYTES, hit: 1 }))
})

test('record sizes are UTF-8 bytes, not characters', () => {
  // 8,193 two-byte characters: 16,386 bytes of text in under 8,200 characters.
  const record = { body: 'é'.repeat(8193) }
  assert.ok(JSON.stringify(record).length < MAX_RECORD_BYTES)
  assert.throws(() => checkResultSize('notes', [{ ...hit(100), record }]), tooLarge({ search: 'notes', limit: MAX_RECORD_BYTES, hit: 0 }))
})

test('a response of exactly 1 MiB passes; one byte more fails SEARCH_RESULT_TOO_LARGE, and the hits are not cut', () => {
  // 65 records of 16,000 bytes (more hits than `limit` allows, each within the record limit),
  // the last one then sized so the JSON the caller would receive is exactly MAX_RESPONSE_BYTES.
  const hits = Array.from({ length: 65 }, () => hit(16_000))
  const short = MAX_RESPONSE_BYTES - responseBytes(hits)
  assert.ok(short > 0 && 16_000 + short + 1 <= MAX_RECORD_BYTES, String(short))
  hits[64] = hit(16_000 + short)
  assert.equal(responseBytes(hits), MAX_RESPONSE_BYTES)
  const passed = checkResultSize('notes', hits)
  assert.equal(passed, hits)
  assert.equal(passed.length, 65)

  const over = [...hits.slice(0, 64), hit(16_000 + short + 1)]
  assert.equal(responseBytes(over), MAX_RESPONSE_BYTES + 1)
  assert.throws(() => checkResultSize('notes', over), tooLarge({ search: 'notes', limit: MAX_RESPONSE_BYTES }))
  // The check fails rather than dropping hits: the caller's array is as it was.
  assert.equal(over.length, 65)
  assert.equal(JSON.stringify(over[64]!.record).length, 16_000 + short + 1)
})

test('the largest response the rules allow (50 hits, 16 KiB records, longest evidence) is under 1 MiB', () => {
  // The longest JSON number (a float64 is at most 24 characters: sign, 17 digits, point,
  // "e-308") and the largest rank (candidates are at most 100).
  const longest = -2.2250738585072014e-308
  assert.equal(JSON.stringify(longest).length, 24)
  const hits = Array.from({ length: MAX_SEARCH_LIMIT }, () => hit(MAX_RECORD_BYTES, longest, CANDIDATES))
  // docs/decisions.md "Search": at most 16,384 + 213 bytes a hit, 829,910 in all.
  assert.equal(JSON.stringify(hits[0]).length, MAX_RECORD_BYTES + 213)
  assert.equal(responseBytes(hits), 829_910)
  assert.ok(responseBytes(hits) < MAX_RESPONSE_BYTES)
  assert.equal(checkResultSize('notes', hits), hits)
})

test('no hits is a response of 11 bytes and passes', () => {
  assert.deepEqual(checkResultSize('notes', []), [])
  assert.equal(responseBytes([]), 11)
})
