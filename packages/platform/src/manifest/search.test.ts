// Tests for data.search declarations.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { manifestWith, onlyError, valid, where } from './test-fixtures.ts'
import { validateManifest } from './validate.ts'

/** data.search with one search; its "- name:" line is 16 and extra lines start at 19. */
const search = (...extra: string[]) =>
  manifestWith(['data:', '  search:', '    - name: notes', '      table: notes', '      select: [id, title]', ...extra])

const FULL_TEXT = ['      fullText:', '        language: english', '        columns: [title]']

describe('data.search', () => {
  test('a full-text search is read with filters defaulting to none', () => {
    const { manifest } = valid(search(...FULL_TEXT))
    assert.deepEqual(manifest?.data.search, [
      { name: 'notes', table: 'notes', select: ['id', 'title'], filters: [], fullText: { language: 'english', columns: ['title'] } },
    ])
  })

  test('a vector search with filters is read', () => {
    const { manifest } = valid(search('      filters: [owner_id, status]', '      vector: { column: embedding, dimensions: 16000, model: m }'))
    assert.deepEqual(manifest?.data.search[0], {
      name: 'notes',
      table: 'notes',
      select: ['id', 'title'],
      filters: ['owner_id', 'status'],
      vector: { column: 'embedding', dimensions: 16000, model: 'm' },
    })
  })

  test('a search needs fullText or vector', () => {
    const error = onlyError(search())
    assert.deepEqual(where(error), { code: 'MANIFEST_SEARCH_MODE_MISSING', path: 'data.search[0]', line: 16, column: 7 })
  })

  test('select must include id', () => {
    const error = onlyError(manifestWith(['data:', '  search:', '    - name: notes', '      table: notes', '      select: [title]', ...FULL_TEXT]))
    assert.deepEqual(where(error), { code: 'MANIFEST_SEARCH_ID_NOT_SELECTED', path: 'data.search[0].select', line: 18, column: 15 })
  })

  test('select must not be empty', () => {
    const error = onlyError(manifestWith(['data:', '  search:', '    - name: notes', '      table: notes', '      select: []', ...FULL_TEXT]))
    assert.deepEqual(where(error), { code: 'MANIFEST_EMPTY_ARRAY', path: 'data.search[0].select', line: 18, column: 15 })
  })

  test('select allows 50 columns but not 51', () => {
    const columns = (count: number) => ['id', ...Array.from({ length: count - 1 }, (_, index) => `c${index}`)].join(', ')
    valid(manifestWith(['data:', '  search:', '    - name: notes', '      table: notes', `      select: [${columns(50)}]`, ...FULL_TEXT]))
    const error = onlyError(manifestWith(['data:', '  search:', '    - name: notes', '      table: notes', `      select: [${columns(51)}]`, ...FULL_TEXT]))
    assert.deepEqual(where(error), { code: 'MANIFEST_TOO_MANY_ITEMS', path: 'data.search[0].select', line: 18, column: 15 })
  })

  test('a repeated selected column is reported on the repeat', () => {
    const error = onlyError(manifestWith(['data:', '  search:', '    - name: notes', '      table: notes', '      select: [id, title, title]', ...FULL_TEXT]))
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_VALUE', path: 'data.search[0].select[2]', line: 18, column: 27 })
  })

  test('column and table names must be SQL identifiers', () => {
    const result = validateManifest(manifestWith(['data:', '  search:', '    - name: notes', '      table: Notes', '      select: [id, "title-x"]', ...FULL_TEXT]))
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_INVALID_FORMAT', path: 'data.search[0].table', line: 17, column: 14 },
      { code: 'MANIFEST_INVALID_FORMAT', path: 'data.search[0].select[1]', line: 18, column: 20 },
    ])
  })

  test('the search name allows no hyphen', () => {
    const error = onlyError(manifestWith(['data:', '  search:', '    - name: my-notes', '      table: notes', '      select: [id]', ...FULL_TEXT]))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'data.search[0].name', line: 16, column: 13 })
  })

  test('a duplicate search name is reported on the second', () => {
    const text = manifestWith([
      'data:',
      '  search:',
      '    - { name: notes, table: notes, select: [id], vector: { column: e, dimensions: 3, model: m } }',
      '    - { name: notes, table: notes, select: [id], vector: { column: e, dimensions: 3, model: m } }',
    ])
    const error = onlyError(text)
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_NAME', path: 'data.search[1].name', line: 17, column: 15 })
  })

  test('fullText needs a built-in language', () => {
    const error = onlyError(search('      fullText:', '        language: klingon', '        columns: [title]'))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_CHOICE', path: 'data.search[0].fullText.language', line: 20, column: 19 })
  })

  test('fullText needs a language and columns', () => {
    const result = validateManifest(search('      fullText: {}'))
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_MISSING_FIELD', path: 'data.search[0].fullText.language', line: 19, column: 17 },
      { code: 'MANIFEST_MISSING_FIELD', path: 'data.search[0].fullText.columns', line: 19, column: 17 },
    ])
  })

  test('fullText allows 16 columns but not 17', () => {
    const columns = (count: number) => Array.from({ length: count }, (_, index) => `c${index}`).join(', ')
    valid(search('      fullText:', '        language: simple', `        columns: [${columns(16)}]`))
    const error = onlyError(search('      fullText:', '        language: simple', `        columns: [${columns(17)}]`))
    assert.deepEqual(where(error), { code: 'MANIFEST_TOO_MANY_ITEMS', path: 'data.search[0].fullText.columns', line: 21, column: 18 })
  })

  test('vector dimensions must be from 1 to 16000', () => {
    const error = onlyError(search('      vector:', '        column: embedding', '        dimensions: 16001', '        model: m'))
    assert.deepEqual(where(error), { code: 'MANIFEST_OUT_OF_RANGE', path: 'data.search[0].vector.dimensions', line: 21, column: 21 })
  })

  test('the vector model is required, non-empty and at most 200 characters', () => {
    const result = validateManifest(search('      vector:', '        column: embedding', '        dimensions: 3'))
    assert.deepEqual(result.errors.map(where), [{ code: 'MANIFEST_MISSING_FIELD', path: 'data.search[0].vector.model', line: 20, column: 9 }])
    assert.equal(onlyError(search('      vector:', '        column: embedding', '        dimensions: 3', '        model: ""')).code, 'MANIFEST_EMPTY_STRING')
    assert.equal(onlyError(search('      vector:', '        column: embedding', '        dimensions: 3', `        model: ${'m'.repeat(201)}`)).code, 'MANIFEST_TOO_LONG')
    valid(search('      vector:', '        column: embedding', '        dimensions: 3', `        model: ${'m'.repeat(200)}`))
  })

  test('an unknown field under data is reported', () => {
    assert.deepEqual(where(onlyError(manifestWith(['data:', '  tables: []']))), { code: 'MANIFEST_UNKNOWN_FIELD', path: 'data.tables', line: 15, column: 3 })
  })

  test('searches need SDK 2.4.0', () => {
    valid(search(...FULL_TEXT).replace('version: 2.6.0', 'version: 2.4.0'))
    const error = onlyError(search(...FULL_TEXT).replace('version: 2.6.0', 'version: 2.3.0'))
    assert.deepEqual(where(error), { code: 'MANIFEST_SDK_VERSION_TOO_LOW', path: 'data.search', line: 16, column: 5 })
    assert.match(error.message, /need runtime\.sdk\.version 2\.4\.0 or later; this manifest pins 2\.3\.0/)
  })

  test('an empty search list needs no SDK gate', () => {
    valid(manifestWith(['data:', '  search: []'], { sdk: '2.0.0' }))
  })
})
