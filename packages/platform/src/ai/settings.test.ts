// The AI_* settings (config.ts): unset by default (ctx.ai then answers AI_NOT_CONFIGURED),
// read as given, AI_BASE_URL checked as an http(s) URL, AI_TIMEOUT_MS a positive number.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig } from '../config.ts'

test('AI settings are unset by default with a 120 s timeout', () => {
  assert.deepEqual(loadConfig({}).ai, { baseUrl: null, apiKey: null, textModel: null, imageModel: null, textModels: [], imageModels: [], timeoutMs: 120_000 })
})

test('AI settings are read from AI_BASE_URL, AI_API_KEY, AI_TEXT_MODEL, AI_IMAGE_MODEL and AI_TIMEOUT_MS', () => {
  const config = loadConfig({
    AI_BASE_URL: 'http://127.0.0.1:11434/v1', AI_API_KEY: 'sk-x', AI_TEXT_MODEL: 'llama3.2', AI_IMAGE_MODEL: 'gpt-image-1', AI_TIMEOUT_MS: '30000',
  })
  assert.deepEqual(config.ai, {
    baseUrl: 'http://127.0.0.1:11434/v1', apiKey: 'sk-x', textModel: 'llama3.2', imageModel: 'gpt-image-1', textModels: [], imageModels: [], timeoutMs: 30_000,
  })
})

test('a bad AI_BASE_URL or AI_TIMEOUT_MS stops the start with a message naming it', () => {
  assert.throws(() => loadConfig({ AI_BASE_URL: 'not a url' }), (error: Error) => error instanceof ConfigError && /AI_BASE_URL/.test(error.message))
  assert.throws(() => loadConfig({ AI_BASE_URL: 'ftp://models.example.com' }), (error: Error) => error instanceof ConfigError && /AI_BASE_URL/.test(error.message))
  assert.throws(() => loadConfig({ AI_TIMEOUT_MS: '0' }), (error: Error) => error instanceof ConfigError && /AI_TIMEOUT_MS/.test(error.message))
})
