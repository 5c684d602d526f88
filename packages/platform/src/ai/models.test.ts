// Per-app AI models: an app's manifest chooses among the models the operator offers
// (AI_TEXT_MODEL / AI_IMAGE_MODEL and the AI_TEXT_MODELS / AI_IMAGE_MODELS lists). The
// choice reaches the provider's request; a deploy naming a model not offered is refused and
// changes nothing; a model the operator withdraws after the deploy fails the call without a
// request. Real Deno Functions against the OpenAI-compatible double that records requests.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { deployApp } from '../../test/integration-fixture.ts'
import type { AiSettings } from '../config.ts'
import { ConfigError, loadConfig } from '../config.ts'
import { ServiceError } from '../lib/errors.ts'
import { allowedModels, checkModelChoice, modelFor } from './models.ts'
import { startProviderDouble, type ProviderDouble } from './test-provider.ts'
import { base64, png } from './test-fixtures.ts'

const SETTINGS: AiSettings = {
  baseUrl: 'http://127.0.0.1:1/v1', apiKey: null, textModel: 'default-text', imageModel: 'default-image',
  textModels: ['small-text', 'large-text'], imageModels: ['small-image'], timeoutMs: 3000,
}

describe('choosing a model', () => {
  test('the default comes first among the allowed models, then the listed ones, once each', () => {
    assert.deepEqual(allowedModels(SETTINGS, 'text'), ['default-text', 'small-text', 'large-text'])
    assert.deepEqual(allowedModels({ ...SETTINGS, textModels: ['default-text'] }, 'text'), ['default-text'])
    const { imageModels: _listed, ...withoutList } = SETTINGS
    assert.deepEqual(allowedModels({ ...withoutList, imageModel: null }, 'image'), [])
  })

  test('no choice is the default; a listed choice is itself; another is AI_MODEL_NOT_ALLOWED naming field, model and list', () => {
    assert.equal(modelFor(SETTINGS, { kind: 'text', choice: undefined }), 'default-text')
    assert.equal(modelFor(SETTINGS, { kind: 'image', choice: { textModel: 'small-text' } }), 'default-image')
    assert.equal(modelFor(SETTINGS, { kind: 'text', choice: { textModel: 'large-text' } }), 'large-text')
    assert.throws(() => modelFor(SETTINGS, { kind: 'image', choice: { imageModel: 'small-text' } }), (error: unknown) => {
      assert.ok(error instanceof ServiceError)
      assert.equal(error.code, 'AI_MODEL_NOT_ALLOWED')
      assert.equal(error.status, 403)
      assert.deepEqual(error.details, { field: 'ai.imageModel', model: 'small-text', allowed: ['default-image', 'small-image'] })
      assert.match(error.message, /AI_IMAGE_MODELS/)
      return true
    })
  })

  test('with no models at all the refusal names the settings to set', () => {
    assert.throws(() => checkModelChoice({ ...SETTINGS, textModel: null, textModels: [] }, { kind: 'text', model: 'x' }),
      /offers no text models: the operator sets AI_TEXT_MODEL and AI_TEXT_MODELS/)
  })

  test('AI_TEXT_MODELS and AI_IMAGE_MODELS are comma-separated lists, each name checked and named when wrong', () => {
    const config = loadConfig({ AI_TEXT_MODELS: ' small-text, llama3.1:8b ,small-text', AI_IMAGE_MODELS: '' })
    assert.deepEqual(config.ai.textModels, ['small-text', 'llama3.1:8b'])
    assert.deepEqual(config.ai.imageModels, [])
    assert.deepEqual(loadConfig({}).ai.textModels, [])
    assert.throws(() => loadConfig({ AI_TEXT_MODELS: 'ok-model,bad model' }),
      (error: unknown) => error instanceof ConfigError && /AI_TEXT_MODELS/.test(error.message) && /"bad model"/.test(error.message))
  })
})

const ASK = `
import { defineFunction, object, string } from '@service/server'
const toBase64 = (data) => { let s = ''; for (const x of data) s += String.fromCharCode(x); return btoa(s) }
export default defineFunction({
  input: object({ method: string() }),
  async handler({ input, ai }) {
    if (input.method === 'text') return { text: await ai.generateText({ prompt: 'Hi.' }) }
    if (input.method === 'object') return { object: await ai.generateObject({ prompt: 'Hi.', schema: object({ a: string() }) }) }
    const image = await ai.generateImage({ prompt: 'A dot' })
    return { base64: toBase64(image.data) }
  },
})`

const FUNCTIONS = `functions:
  - name: ask
    entrypoint: functions/ask.ts
    access: public
`

describe(`per-app AI models through ctx.ai (${backend})`, () => {
  let h: Harness
  let double: ProviderDouble
  let owner: { token: string }
  // The platform reads the operator's lists on every call: the test changes them as an operator's restart would.
  const settings: { -readonly [K in keyof AiSettings]: AiSettings[K] } = { ...SETTINGS }

  before(async () => {
    double = await startProviderDouble()
    settings.baseUrl = double.baseUrl
    h = await startHarness(undefined, { ai: settings })
    owner = await h.createOwner('ann@acme.test')
    for (const slug of ['picker', 'plain', 'greedy']) {
      assert.equal((await h.request('/v1/apps', { token: owner.token, json: { slug, visibility: 'public' } })).status, 201)
    }
    await deployApp(h, owner.token, 'picker', {
      'service.yaml': manifest('picker', `${FUNCTIONS}ai:\n  textModel: small-text\n  imageModel: small-image\n`),
      'functions/ask.ts': ASK,
    })
    await deployApp(h, owner.token, 'plain', { 'service.yaml': manifest('plain', FUNCTIONS), 'functions/ask.ts': ASK })
  })
  after(async () => {
    await h.close()
    await double.close()
  })

  async function ask(slug: string, method: string): Promise<{ status: number; body: any }> {
    const res = await h.request('/_service/functions/ask', { host: slug, json: { method }, headers: { 'x-service-sdk': '1' } })
    return { status: res.status, body: await res.json() }
  }
  const lastModel = () => (double.requests.at(-1)!.body as { model: string }).model

  test('the app\'s chosen text and image models are the ones the provider is asked for', async () => {
    double.answer({ kind: 'chat', content: 'Hello.' })
    assert.deepEqual((await ask('picker', 'text')).body, { text: 'Hello.' })
    assert.equal(lastModel(), 'small-text')
    double.answer({ kind: 'chat', content: '{"a":"b"}' })
    assert.deepEqual((await ask('picker', 'object')).body, { object: { a: 'b' } })
    assert.equal(lastModel(), 'small-text')
    double.answer({ kind: 'image', b64: base64(png()) })
    assert.equal((await ask('picker', 'image')).status, 200)
    assert.equal(lastModel(), 'small-image')
  })

  test('an app without an ai section uses the operator\'s defaults', async () => {
    double.answer({ kind: 'chat', content: 'Hello.' })
    assert.equal((await ask('plain', 'text')).status, 200)
    assert.equal(lastModel(), 'default-text')
  })

  test('a deploy naming a model the platform does not offer is refused and changes nothing', async () => {
    const res = await h.request('/v1/apps/greedy/deployments', {
      token: owner.token,
      json: bundle({ 'service.yaml': manifest('greedy', `${FUNCTIONS}ai:\n  textModel: huge-text\n`), 'functions/ask.ts': ASK }),
    })
    assert.equal(res.status, 403)
    const { error } = await res.json() as { error: { code: string; details: unknown } }
    assert.equal(error.code, 'AI_MODEL_NOT_ALLOWED')
    assert.deepEqual(error.details, { field: 'ai.textModel', model: 'huge-text', allowed: ['default-text', 'small-text', 'large-text'] })
    const releases = await h.t.db.query(`select 1 from platform.releases r join platform.apps a on a.id = r.app_id where a.slug = 'greedy'`)
    assert.equal(releases.length, 0)
    const dryRun = await h.request('/v1/apps/greedy/deployments?dryRun=true', {
      token: owner.token,
      json: bundle({ 'service.yaml': manifest('greedy', `${FUNCTIONS}ai:\n  imageModel: huge-image\n`), 'functions/ask.ts': ASK }),
    })
    assert.equal(((await dryRun.json()) as { error: { code: string } }).error.code, 'AI_MODEL_NOT_ALLOWED')
  })

  test('a model withdrawn after the deploy fails the call with AI_MODEL_NOT_ALLOWED and asks the provider nothing', async () => {
    settings.textModels = ['large-text']
    try {
      const before = double.requests.length
      const result = await ask('picker', 'text')
      assert.equal(result.status, 403)
      assert.equal(result.body.error.code, 'AI_MODEL_NOT_ALLOWED')
      assert.equal(double.requests.length, before)
    } finally {
      settings.textModels = SETTINGS.textModels!
    }
  })
})
