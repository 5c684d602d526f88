/**
 * The platform logger: JSON lines at or above the configured level, and the line's own
 * time, level and message kept even when a caller's fields use those names.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createLogger, withFields } from './logger.ts'

describe('createLogger', () => {
  const capture = (level: 'debug' | 'info' | 'warn' | 'error') => {
    const lines: Record<string, unknown>[] = []
    const logger = createLogger({ level, write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) })
    return { logger, lines }
  }

  test('writes the lines at or above its level and drops the others', () => {
    const { logger, lines } = capture('warn')
    logger.debug('d')
    logger.info('i')
    logger.warn('w', { n: 1 })
    logger.error('e')
    assert.deepEqual(lines.map((l) => [l.level, l.message]), [['warn', 'w'], ['error', 'e']])
    assert.equal(lines[0]!.n, 1)
    assert.match(String(lines[0]!.time), /^\d{4}-\d\d-\d\dT/)
  })

  test('a field named message, level or time does not replace the line\'s own', () => {
    const { logger, lines } = capture('info')
    logger.info('deploy failed', { message: 'from a field', level: 'debug', time: 'then', app: 'notes' })
    assert.deepEqual([lines[0]!.message, lines[0]!.level, lines[0]!.app], ['deploy failed', 'info', 'notes'])
    assert.notEqual(lines[0]!.time, 'then')
  })
})

describe('withFields', () => {
  test('adds its fields to every line; the caller\'s fields win on a clash', () => {
    const lines: string[] = []
    const logger = withFields(createLogger({ level: 'debug', write: (line) => lines.push(line) }), { appId: 'a1', releaseId: 'r1' })
    logger.info('one', { releaseId: 'r2', extra: 1 })
    logger.debug('two')
    const [one, two] = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
    assert.equal(one!.appId, 'a1')
    assert.equal(one!.releaseId, 'r2')
    assert.equal(one!.extra, 1)
    assert.equal(two!.releaseId, 'r1')
    assert.equal(two!.level, 'debug')
  })
})
