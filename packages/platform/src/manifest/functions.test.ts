// Tests for the functions section: names, entrypoints, access, timeouts and routes.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { entrypointProblem } from './functions.ts'
import { validateManifest } from './index.ts'
import { routePathProblem } from './routes.ts'
import { manifestWith, onlyError, valid, where } from './test-fixtures.ts'

/** A manifest whose only Function is the one given (its "- name:" line is line 8). */
function withFunction(lines: readonly string[], options: { sdk?: string } = {}): string {
  return manifestWith([], options).replace(/functions:\n[\s\S]*$/, ['functions:', ...lines, ''].join('\n'))
}

describe('functions', () => {
  test('timeoutSeconds defaults to 30 and routes to none', () => {
    const { manifest } = valid(withFunction(['  - name: a', '    entrypoint: functions/a.ts', '    access: public']))
    assert.deepEqual(manifest?.functions, [{ name: 'a', entrypoint: 'functions/a.ts', access: 'public', timeoutSeconds: 30, routes: [] }])
  })

  test('a missing name is reported at the Function mapping', () => {
    const error = onlyError(withFunction(['  - entrypoint: functions/a.ts', '    access: user']))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'functions[0].name', line: 8, column: 5 })
  })

  test('a missing access is reported at the Function mapping', () => {
    const error = onlyError(withFunction(['  - name: a', '    entrypoint: functions/a.ts']))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'functions[0].access', line: 8, column: 5 })
  })

  test('a name with a dot is invalid', () => {
    const error = onlyError(withFunction(['  - name: create.task', '    entrypoint: functions/a.ts', '    access: user']))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'functions[0].name', line: 8, column: 11 })
  })

  test('a name of 65 characters is invalid and one of 64 is valid', () => {
    valid(withFunction([`  - name: a${'b'.repeat(63)}`, '    entrypoint: functions/a.ts', '    access: user']))
    const error = onlyError(withFunction([`  - name: a${'b'.repeat(64)}`, '    entrypoint: functions/a.ts', '    access: user']))
    assert.equal(error.code, 'MANIFEST_INVALID_FORMAT')
  })

  test('a numeric name is the wrong type', () => {
    const error = onlyError(withFunction(['  - name: 42', '    entrypoint: functions/a.ts', '    access: user']))
    assert.deepEqual(where(error), { code: 'MANIFEST_WRONG_TYPE', path: 'functions[0].name', line: 8, column: 11 })
  })

  test('an empty name is an empty string', () => {
    const error = onlyError(withFunction(['  - name: "  "', '    entrypoint: functions/a.ts', '    access: user']))
    assert.deepEqual(where(error), { code: 'MANIFEST_EMPTY_STRING', path: 'functions[0].name', line: 8, column: 11 })
  })

  test('a duplicate name is reported on the second, naming the first line', () => {
    const error = onlyError(manifestWith(['  - name: worker', '    entrypoint: functions/other.ts', '    access: system']))
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_NAME', path: 'functions[2].name', line: 14, column: 11 })
    assert.match(error.message, /already used at line 8/)
  })

  test('access must be user, public or system', () => {
    const error = onlyError(withFunction(['  - name: a', '    entrypoint: functions/a.ts', '    access: admin']))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_CHOICE', path: 'functions[0].access', line: 10, column: 13 })
    assert.match(error.message, /use "user", "public" or "system"/)
  })

  test('timeoutSeconds must be an integer from 1 to 900', () => {
    const base = ['  - name: a', '    entrypoint: functions/a.ts', '    access: user']
    valid(withFunction([...base, '    timeoutSeconds: 900']))
    valid(withFunction([...base, '    timeoutSeconds: 1']))
    assert.deepEqual(where(onlyError(withFunction([...base, '    timeoutSeconds: 901']))), { code: 'MANIFEST_OUT_OF_RANGE', path: 'functions[0].timeoutSeconds', line: 11, column: 21 })
    assert.deepEqual(where(onlyError(withFunction([...base, '    timeoutSeconds: 0']))), { code: 'MANIFEST_OUT_OF_RANGE', path: 'functions[0].timeoutSeconds', line: 11, column: 21 })
    assert.deepEqual(where(onlyError(withFunction([...base, '    timeoutSeconds: 2.5']))), { code: 'MANIFEST_NOT_INTEGER', path: 'functions[0].timeoutSeconds', line: 11, column: 21 })
    assert.deepEqual(where(onlyError(withFunction([...base, '    timeoutSeconds: "30"']))), { code: 'MANIFEST_WRONG_TYPE', path: 'functions[0].timeoutSeconds', line: 11, column: 21 })
    assert.deepEqual(where(onlyError(withFunction([...base, '    timeoutSeconds: 1e2']))), { code: 'MANIFEST_NOT_INTEGER', path: 'functions[0].timeoutSeconds', line: 11, column: 21 })
  })

  test('an unknown Function field is reported at its key', () => {
    const error = onlyError(withFunction(['  - name: a', '    entrypoint: functions/a.ts', '    access: user', '    runtime: deno']))
    assert.deepEqual(where(error), { code: 'MANIFEST_UNKNOWN_FIELD', path: 'functions[0].runtime', line: 11, column: 5 })
  })

  test('functions as a mapping is the wrong type', () => {
    const error = onlyError(withFunction(['  worker: functions/worker.ts']))
    assert.deepEqual(where(error), { code: 'MANIFEST_WRONG_TYPE', path: 'functions', line: 8, column: 3 })
  })

  test('a Function entry that is a string is the wrong type', () => {
    const error = onlyError(withFunction(['  - worker']))
    assert.deepEqual(where(error), { code: 'MANIFEST_WRONG_TYPE', path: 'functions[0]', line: 8, column: 5 })
  })
})

describe('entrypoints', () => {
  test('valid entrypoints are relative .ts files under functions/', () => {
    assert.equal(entrypointProblem('functions/create-task.ts'), null)
    assert.equal(entrypointProblem('functions/jobs/nightly.ts'), null)
  })

  for (const [path, reason] of [
    ['/functions/a.ts', /remove the leading "\/"/],
    ['functions/../secrets.ts', /must not contain "\.\." segments/],
    ['src/a.ts', /must be under functions\//],
    ['functions/a.js', /ending in "\.ts"/],
    ['functions/.ts', /ending in "\.ts"/],
    ['./functions/a.ts', /must not contain "\." or empty segments/],
    ['functions//a.ts', /must not contain "\." or empty segments/],
    ['functions\\a.ts', /write the path with "\/"/],
    ['functions.ts', /must be under functions\//],
  ] as const) {
    test(`"${path}" is not a valid entrypoint`, () => {
      assert.match(entrypointProblem(path) ?? '', reason)
    })
  }

  test('an invalid entrypoint is reported at its value', () => {
    const error = onlyError(withFunction(['  - name: a', '    entrypoint: functions/a.js', '    access: user']))
    assert.deepEqual(where(error), { code: 'MANIFEST_ENTRYPOINT_INVALID', path: 'functions[0].entrypoint', line: 9, column: 17 })
  })

  test('with a file list, a missing entrypoint file is reported', () => {
    const text = withFunction(['  - name: a', '    entrypoint: functions/a.ts', '    access: user'])
    valid(text, { files: new Set(['functions/a.ts']) })
    const error = onlyError(text, { files: new Set(['functions/b.ts']) })
    assert.deepEqual(where(error), { code: 'MANIFEST_ENTRYPOINT_NOT_FOUND', path: 'functions[0].entrypoint', line: 9, column: 17 })
  })
})

describe('routes', () => {
  const page = ['  - name: page', '    entrypoint: functions/page.ts', '    access: public', '    routes:']

  test('routes are read with their method and path', () => {
    const { manifest } = valid(withFunction([...page, '      - method: GET', '        path: /', '      - { method: DELETE, path: /api/tasks/:id }']))
    assert.deepEqual(manifest?.functions[0]?.routes, [
      { method: 'GET', path: '/' },
      { method: 'DELETE', path: '/api/tasks/:id' },
    ])
  })

  test('a lowercase method is rejected with the uppercase spelling', () => {
    const error = onlyError(withFunction([...page, '      - method: get', '        path: /a']))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_CHOICE', path: 'functions[0].routes[0].method', line: 12, column: 17 })
    assert.match(error.message, /write "GET"/)
  })

  test('an unsupported method is rejected', () => {
    const error = onlyError(withFunction([...page, '      - method: OPTIONS', '        path: /a']))
    assert.equal(error.code, 'MANIFEST_INVALID_CHOICE')
  })

  test('a route path is reported at its value', () => {
    const error = onlyError(withFunction([...page, '      - method: GET', '        path: api/tasks']))
    assert.deepEqual(where(error), { code: 'MANIFEST_ROUTE_PATH_INVALID', path: 'functions[0].routes[0].path', line: 13, column: 15 })
  })

  test('a reserved route path is reported at its value', () => {
    const error = onlyError(withFunction([...page, '      - method: GET', '        path: /rest/v1/tasks']))
    assert.deepEqual(where(error), { code: 'MANIFEST_ROUTE_PATH_RESERVED', path: 'functions[0].routes[0].path', line: 13, column: 15 })
  })

  test('a path over 256 characters is too long', () => {
    const error = onlyError(withFunction([...page, '      - method: GET', `        path: /${'a'.repeat(256)}`]))
    assert.deepEqual(where(error), { code: 'MANIFEST_TOO_LONG', path: 'functions[0].routes[0].path', line: 13, column: 15 })
  })

  test('routes on a system Function are rejected at routes', () => {
    const error = onlyError(withFunction(['  - name: job', '    entrypoint: functions/job.ts', '    access: system', '    routes:', '      - method: POST', '        path: /hooks/job']))
    assert.deepEqual(where(error), { code: 'MANIFEST_ROUTES_ON_SYSTEM_FUNCTION', path: 'functions[0].routes', line: 12, column: 7 })
  })

  test('routes need SDK 2.3.0', () => {
    const lines = [...page, '      - method: GET', '        path: /a']
    valid(withFunction(lines, { sdk: '2.3.0' }))
    const error = onlyError(withFunction(lines, { sdk: '2.2.0' }))
    assert.deepEqual(where(error), { code: 'MANIFEST_SDK_VERSION_TOO_LOW', path: 'functions[0].routes', line: 12, column: 7 })
    assert.equal(error.message, 'function routes need runtime.sdk.version 2.3.0 or later; this manifest pins 2.2.0')
  })

  test('an empty routes list needs no SDK gate', () => {
    valid(withFunction([...page.slice(0, 3), '    routes: []'], { sdk: '2.0.0' }))
  })

  test('routes need schemaVersion 3', () => {
    const text = withFunction([...page, '      - method: GET', '        path: /a']).replace('schemaVersion: 3', 'schemaVersion: 2')
    const result = validateManifest(text)
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_SCHEMA_VERSION_UNSUPPORTED', path: 'schemaVersion', line: 1, column: 16 },
      { code: 'MANIFEST_SCHEMA_VERSION_TOO_LOW', path: 'functions[0].routes', line: 12, column: 7 },
    ])
  })

  test('two routes with the same method and path shape conflict, across Functions', () => {
    const text = withFunction([
      ...page,
      '      - method: GET',
      '        path: /api/tasks/:id',
      '  - name: other',
      '    entrypoint: functions/other.ts',
      '    access: user',
      '    routes:',
      '      - method: GET',
      '        path: /api/tasks/:taskId',
      '      - method: PUT',
      '        path: /api/tasks/:taskId',
    ])
    const error = onlyError(text)
    assert.deepEqual(where(error), { code: 'MANIFEST_ROUTE_CONFLICT', path: 'functions[1].routes[0]', line: 18, column: 9 })
    assert.match(error.message, /GET \/api\/tasks\/:id of Function "page" at line 12/)
  })

  test('an unknown route field is reported', () => {
    const error = onlyError(withFunction([...page, '      - method: GET', '        path: /a', '        auth: none']))
    assert.deepEqual(where(error), { code: 'MANIFEST_UNKNOWN_FIELD', path: 'functions[0].routes[0].auth', line: 14, column: 9 })
  })
})

describe('routePathProblem', () => {
  for (const path of ['/', '/a', '/api/tasks/:id', '/files/:name/v2', '/a.b~c-d_e', '/restaurants', '/authors/:id', '/v10', '/_services']) {
    test(`"${path}" is a valid route path`, () => {
      assert.equal(routePathProblem(path), null)
    })
  }

  for (const [path, reason] of [
    ['tasks', /must start with "\/"/],
    ['/tasks/', /must not end with "\/"/],
    ['/a//b', /empty segment/],
    ['/a/../b', /dot segments/],
    ['/a b', /may only contain/],
    ['/a?x=1', /may only contain/],
    ['/:1d', /not a valid parameter/],
    ['/:', /not a valid parameter/],
    ['/:id/x/:id', /appears twice/],
    [`/${'a'.repeat(256)}`, /the limit is 256/],
  ] as const) {
    test(`"${path.slice(0, 20)}" is an invalid route path`, () => {
      const problem = routePathProblem(path)
      assert.equal(problem?.code, 'MANIFEST_ROUTE_PATH_INVALID')
      assert.match(problem?.message ?? '', reason)
    })
  }

  for (const path of ['/_service', '/_service/x', '/rest', '/rest/v1/tasks', '/v1', '/v1/apps', '/auth', '/auth/callback']) {
    test(`"${path}" is reserved`, () => {
      assert.equal(routePathProblem(path)?.code, 'MANIFEST_ROUTE_PATH_RESERVED')
    })
  }
})
