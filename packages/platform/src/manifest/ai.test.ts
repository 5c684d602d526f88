// Tests for the ai section: the models an app chooses, with line-precise errors.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { manifestWith, onlyError, valid, where } from './test-fixtures.ts'

describe('ai', () => {
  test('absent, the manifest makes no model choice', () => {
    assert.equal(valid(manifestWith([])).manifest?.ai, undefined)
  })

  test('a text and an image model are read as written', () => {
    const { manifest } = valid(manifestWith(['ai:', '  textModel: llama3.1:8b', '  imageModel: openai/gpt-image-1']))
    assert.deepEqual(manifest?.ai, { textModel: 'llama3.1:8b', imageModel: 'openai/gpt-image-1' })
  })

  test('either model alone', () => {
    assert.deepEqual(valid(manifestWith(['ai:', '  textModel: gpt-4o-mini'])).manifest?.ai, { textModel: 'gpt-4o-mini' })
    assert.deepEqual(valid(manifestWith(['ai:', '  imageModel: dall-e-3'])).manifest?.ai, { imageModel: 'dall-e-3' })
  })

  for (const model of ['gpt 4o', '-model', 'model?', 'ünicode']) {
    test(`the model ${JSON.stringify(model)} is refused where it is written`, () => {
      const error = onlyError(manifestWith(['ai:', `  textModel: '${model}'`]))
      assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'ai.textModel', line: 15, column: 14 })
    })
  }

  test('a model name over 200 characters is too long', () => {
    assert.equal(where(onlyError(manifestWith(['ai:', `  imageModel: ${'m'.repeat(201)}`]))).code, 'MANIFEST_TOO_LONG')
  })

  test('a model that is not a string is the wrong type', () => {
    assert.deepEqual(where(onlyError(manifestWith(['ai:', '  textModel: [a, b]']))),
      { code: 'MANIFEST_WRONG_TYPE', path: 'ai.textModel', line: 15, column: 14 })
  })

  test('an unknown field of ai is refused', () => {
    const error = onlyError(manifestWith(['ai:', '  model: gpt-4o']))
    assert.equal(where(error).code, 'MANIFEST_UNKNOWN_FIELD')
    assert.equal(where(error).path, 'ai.model')
    assert.equal(where(error).line, 15)
  })

  test('ai must be a mapping', () => {
    assert.equal(where(onlyError(manifestWith(['ai: gpt-4o']))).code, 'MANIFEST_WRONG_TYPE')
  })
})
