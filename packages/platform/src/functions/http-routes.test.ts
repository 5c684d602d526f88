// The route table of a release: which Function a method and path reach, with its parameters.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { FunctionDeclaration, FunctionRoute } from '../manifest/index.ts'
import { compileRoutes } from './http-routes.ts'

function fn(name: string, routes: FunctionRoute[], access: FunctionDeclaration['access'] = 'public'): FunctionDeclaration {
  return { name, entrypoint: `functions/${name}.ts`, access, timeoutSeconds: 30, routes }
}

const table = compileRoutes([
  fn('listTasks', [{ method: 'GET', path: '/api/tasks' }, { method: 'POST', path: '/api/tasks' }]),
  fn('newTask', [{ method: 'GET', path: '/api/tasks/new' }]),
  fn('getTask', [{ method: 'GET', path: '/api/tasks/:id' }, { method: 'DELETE', path: '/api/tasks/:id' }]),
  fn('headTask', [{ method: 'HEAD', path: '/api/tasks/:taskId/file' }]),
  fn('comment', [{ method: 'PUT', path: '/api/tasks/:taskId/comments/:commentId' }]),
  fn('home', [{ method: 'GET', path: '/' }]),
  fn('page', [{ method: 'GET', path: '/:slug' }]),
  fn('hidden', [{ method: 'GET', path: '/hidden' }], 'system'),
])

function reached(method: string, path: string): string {
  const match = table.match(method, path)
  if (!match.matched) return match.methods.length === 0 ? 'none' : `methods ${match.methods.join(',')}`
  return `${match.declaration.name} ${match.routeMethod} ${JSON.stringify(match.params)}`
}

describe('compileRoutes', () => {
  test('a method and path reach the declared Function with its parameters', () => {
    assert.equal(reached('GET', '/api/tasks'), 'listTasks GET {}')
    assert.equal(reached('POST', '/api/tasks'), 'listTasks POST {}')
    assert.equal(reached('GET', '/api/tasks/42'), 'getTask GET {"id":"42"}')
    assert.equal(reached('DELETE', '/api/tasks/42'), 'getTask DELETE {"id":"42"}')
    assert.equal(reached('PUT', '/api/tasks/7/comments/9'), 'comment PUT {"taskId":"7","commentId":"9"}')
    assert.equal(reached('GET', '/'), 'home GET {}')
    assert.equal(reached('GET', '/about'), 'page GET {"slug":"about"}')
  })

  test('a literal segment wins over a parameter at the same place', () => {
    assert.equal(reached('GET', '/api/tasks/new'), 'newTask GET {}')
  })

  test('parameters are percent-decoded; an undecodable segment matches nothing', () => {
    assert.equal(reached('GET', '/api/tasks/a%20b%2Fc'), 'getTask GET {"id":"a b/c"}')
    assert.equal(reached('GET', '/api/tasks/%E0%A4%A'), 'none')
    assert.equal(reached('GET', '/api/t%61sks'), 'listTasks GET {}')
  })

  test('paths compare exactly: no trailing slash, no empty segment, case-sensitive', () => {
    assert.equal(reached('GET', '/api/tasks/'), 'none')
    assert.equal(reached('GET', '/api//tasks'), 'none')
    assert.equal(reached('GET', '/API/tasks'), 'none')
    assert.equal(reached('GET', '/api/tasks/1/2'), 'none')
  })

  test('HEAD runs a HEAD route, else the GET route of the same path', () => {
    assert.equal(reached('HEAD', '/api/tasks/3/file'), 'headTask HEAD {"taskId":"3"}')
    assert.equal(reached('HEAD', '/api/tasks/3'), 'getTask GET {"id":"3"}')
    assert.equal(reached('GET', '/api/tasks/3/file'), 'methods HEAD')
  })

  test('a path declared for other methods reports them', () => {
    assert.equal(reached('PATCH', '/api/tasks/3'), 'methods GET,DELETE')
    assert.equal(reached('POST', '/about'), 'methods GET')
  })

  test('system Functions never get a route', () => {
    assert.equal(reached('GET', '/hidden'), 'page GET {"slug":"hidden"}')
    const onlySystem = compileRoutes([fn('hidden', [{ method: 'GET', path: '/hidden' }], 'system')])
    assert.equal(onlySystem.empty, true)
    assert.equal(onlySystem.match('GET', '/hidden').matched, false)
  })

  test('a parameter named differently by two routes keeps each route\'s own name', () => {
    const renamed = compileRoutes([
      fn('a', [{ method: 'GET', path: '/t/:id' }]),
      fn('b', [{ method: 'GET', path: '/t/:taskId/x' }]),
    ])
    const a = renamed.match('GET', '/t/1')
    const b = renamed.match('GET', '/t/2/x')
    assert.ok(a.matched && b.matched)
    assert.deepEqual([a.declaration.name, a.params], ['a', { id: '1' }])
    assert.deepEqual([b.declaration.name, b.params], ['b', { taskId: '2' }])
  })

  test('a release without routes is empty and matches nothing', () => {
    const none = compileRoutes([fn('a', [])])
    assert.equal(none.empty, true)
    assert.equal(none.match('GET', '/').matched, false)
  })
})
