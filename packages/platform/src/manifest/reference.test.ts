/**
 * docs/manifest.md, the service.yaml reference, against the validator: the field paths its
 * tables name are exactly the ones the validator accepts (MANIFEST_FIELDS), its complete
 * examples validate, and a misplaced top-level field (a per-Function `secrets:`) gets a
 * message that points to the right place.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { manifestFieldPaths } from './fields.ts'
import { validateManifest } from './validate.ts'

const REFERENCE = new URL('../../../../docs/manifest.md', import.meta.url)
const text = readFileSync(REFERENCE, 'utf8')

/** The first cell of every table row, when it is a backticked field path. */
function documentedPaths(markdown: string): string[] {
  return [...markdown.matchAll(/^\| `([^`]+)` \|/gm)].map((match) => match[1]!)
}

describe('docs/manifest.md', () => {
  test('names every field the validator accepts, and no field it does not', () => {
    const documented = documentedPaths(text)
    const known = manifestFieldPaths()
    assert.ok(known.includes('functions[].entrypoint') && known.includes('secrets.<NAME>'), 'the catalog is read')
    const repeated = documented.filter((path, index) => documented.indexOf(path) !== index)
    assert.deepEqual(repeated, [], 'each field has one row')
    assert.deepEqual(known.filter((path) => !documented.includes(path)), [], 'fields the validator accepts but the reference leaves out')
    assert.deepEqual(documented.filter((path) => !known.includes(path)), [], 'fields the reference names but the validator refuses')
  })

  test('every complete example in it is a valid manifest', () => {
    const examples = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1]!).filter((yaml) => yaml.startsWith('schemaVersion:'))
    assert.ok(examples.length >= 1, 'the reference has a complete example')
    for (const example of examples) {
      const { manifest, errors } = validateManifest(example)
      assert.deepEqual(errors, [], 'the example validates')
      assert.ok(manifest)
    }
  })
})

describe('a top-level field written inside another mapping', () => {
  const withFunction = (extra: string[]) => [
    'schemaVersion: 3', 'app:', '  id: tasks', 'runtime:', '  sdk:', '    version: 2.6.0', 'functions:',
    '  - name: charge', '    entrypoint: functions/charge.ts', '    access: user', ...extra, '',
  ].join('\n')

  test('a per-Function secrets: is an unknown field whose message shows the top-level syntax', () => {
    const { errors } = validateManifest(withFunction(['    secrets:', '      STRIPE_KEY: required']))
    assert.equal(errors.length, 1)
    const [error] = errors
    assert.equal(error!.code, 'MANIFEST_UNKNOWN_FIELD')
    assert.equal(error!.path, 'functions[0].secrets')
    assert.match(error!.message, /secrets are declared once for the whole app, at the top level of service\.yaml/)
    assert.match(error!.message, /"secrets:" then " {2}STRIPE_KEY: required"/)
    assert.match(error!.message, /ctx\.secrets/)
  })

  test('another top-level field in a Function says it belongs at the top level', () => {
    const { errors } = validateManifest(withFunction(['    queues: []']))
    assert.equal(errors[0]?.code, 'MANIFEST_UNKNOWN_FIELD')
    assert.match(errors[0]!.message, /"queues" is a top-level field of service\.yaml/)
  })

  test('an unknown field that is no top-level field keeps the plain message', () => {
    const { errors } = validateManifest(withFunction(['    memoryMb: 128']))
    assert.doesNotMatch(errors[0]!.message, /top-level/)
    assert.match(errors[0]!.message, /^unknown field "memoryMb"; known fields here: name, entrypoint, access, timeoutSeconds, routes$/)
  })
})
