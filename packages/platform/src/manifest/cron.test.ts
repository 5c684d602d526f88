// Tests for the cron section of the manifest.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { manifestWith, onlyError, valid, where } from './test-fixtures.ts'
import { validateManifest } from './validate.ts'

const cron = (schedule: string, ...extra: string[]) =>
  manifestWith(['cron:', '  - name: nightly', `    schedule: "${schedule}"`, '    function: worker', ...extra])

describe('cron', () => {
  test('enabled defaults to true and timezone to UTC', () => {
    const { manifest } = valid(cron('0 3 * * *'))
    assert.deepEqual(manifest?.cron, [{ name: 'nightly', schedule: '0 3 * * *', function: 'worker', enabled: true, timezone: 'UTC' }])
  })

  test('enabled and timezone are read', () => {
    const { manifest } = valid(cron('0 3 * * *', '    enabled: false', '    timezone: America/New_York'))
    assert.deepEqual(manifest?.cron[0], { name: 'nightly', schedule: '0 3 * * *', function: 'worker', enabled: false, timezone: 'America/New_York' })
  })

  test('UTC and Etc/UTC are valid timezones', () => {
    valid(cron('0 3 * * *', '    timezone: UTC'))
    valid(cron('0 3 * * *', '    timezone: Etc/UTC'))
  })

  for (const [schedule, detail] of [
    ['60 * * * *', 'minute field "60": 60 is out of range 0-59'],
    ['* * * *', 'expected 5 fields (minute hour day-of-month month day-of-week) but found 4'],
    ['*/0 * * * *', 'minute field "*/0": step must be at least 1'],
    ['5-2 * * * *', 'minute field "5-2": range 5-2 is reversed; the start must not be after the end'],
  ] as const) {
    test(`"${schedule}" is an invalid schedule`, () => {
      const error = onlyError(cron(schedule))
      assert.deepEqual(where(error), { code: 'MANIFEST_CRON_SCHEDULE_INVALID', path: 'cron[0].schedule', line: 16, column: 15 })
      assert.equal(error.message, `"${schedule}" is not a valid cron schedule: ${detail}`)
    })
  }

  test('a numeric schedule is the wrong type', () => {
    const error = onlyError(manifestWith(['cron:', '  - name: nightly', '    schedule: 5', '    function: worker']))
    assert.deepEqual(where(error), { code: 'MANIFEST_WRONG_TYPE', path: 'cron[0].schedule', line: 16, column: 15 })
  })

  test('Mars/Olympus is not a timezone', () => {
    const error = onlyError(cron('0 3 * * *', '    timezone: Mars/Olympus'))
    assert.deepEqual(where(error), { code: 'MANIFEST_TIMEZONE_INVALID', path: 'cron[0].timezone', line: 18, column: 15 })
  })

  test('a lowercase timezone is not accepted', () => {
    assert.equal(onlyError(cron('0 3 * * *', '    timezone: europe/berlin')).code, 'MANIFEST_TIMEZONE_INVALID')
  })

  test('enabled must be a boolean', () => {
    assert.deepEqual(where(onlyError(cron('0 3 * * *', '    enabled: yes'))), { code: 'MANIFEST_WRONG_TYPE', path: 'cron[0].enabled', line: 18, column: 14 })
  })

  test('a cron target must be declared', () => {
    const error = onlyError(manifestWith(['cron:', '  - name: nightly', '    schedule: "0 3 * * *"', '    function: cleanup']))
    assert.deepEqual(where(error), { code: 'MANIFEST_FUNCTION_NOT_DECLARED', path: 'cron[0].function', line: 17, column: 15 })
  })

  test('a cron target must be a system Function', () => {
    const error = onlyError(manifestWith(['cron:', '  - name: nightly', '    schedule: "0 3 * * *"', '    function: page']))
    assert.deepEqual(where(error), { code: 'MANIFEST_FUNCTION_NOT_SYSTEM', path: 'cron[0].function', line: 17, column: 15 })
  })

  test('a duplicate cron name is reported on the second', () => {
    const text = manifestWith([
      'cron:',
      '  - { name: nightly, schedule: "0 3 * * *", function: worker }',
      '  - { name: nightly, schedule: "0 4 * * *", function: worker }',
    ])
    const error = onlyError(text)
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_NAME', path: 'cron[1].name', line: 16, column: 13 })
    assert.match(error.message, /already used at line 15/)
  })

  test('missing schedule and function are both reported at the entry', () => {
    const text = manifestWith(['cron:', '  - name: nightly'])
    const { errors } = validateManifest(text)
    assert.deepEqual(errors.map(where), [
      { code: 'MANIFEST_MISSING_FIELD', path: 'cron[0].schedule', line: 15, column: 5 },
      { code: 'MANIFEST_MISSING_FIELD', path: 'cron[0].function', line: 15, column: 5 },
    ])
  })
})
