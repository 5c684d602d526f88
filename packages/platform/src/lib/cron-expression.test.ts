// Tests for five-field cron expression parsing.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { cronExpressionError, parseCronExpression, type CronExpression } from './cron-expression.ts'

function parsed(text: string): CronExpression {
  const result = parseCronExpression(text)
  if (!result.ok) assert.fail(`expected "${text}" to parse, got: ${result.error}`)
  return result.expression
}

function errorOf(text: string): string {
  const result = parseCronExpression(text)
  if (result.ok) assert.fail(`expected "${text}" to be rejected`)
  return result.error
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index)

describe('parseCronExpression', () => {
  test('a daily schedule lists one minute and one hour and leaves the days unrestricted', () => {
    assert.deepEqual(parsed('0 3 * * *'), {
      minutes: [0],
      hours: [3],
      daysOfMonth: range(1, 31),
      months: range(1, 12),
      daysOfWeek: range(0, 6),
      domRestricted: false,
      dowRestricted: false,
    })
  })

  test('ranges, lists and steps expand to sorted unique values', () => {
    const expression = parsed('*/15 8-18/2 1,15,1 1-3,2 *')
    assert.deepEqual(expression.minutes, [0, 15, 30, 45])
    assert.deepEqual(expression.hours, [8, 10, 12, 14, 16, 18])
    assert.deepEqual(expression.daysOfMonth, [1, 15])
    assert.deepEqual(expression.months, [1, 2, 3])
    assert.equal(expression.domRestricted, true)
  })

  test('month and day names are accepted in any case, also in ranges and with steps', () => {
    const expression = parsed('0 0 * jan,Mar-MAY/2,dec mon-FRI')
    assert.deepEqual(expression.months, [1, 3, 5, 12])
    assert.deepEqual(expression.daysOfWeek, [1, 2, 3, 4, 5])
    assert.equal(expression.dowRestricted, true)
  })

  test('day-of-week 7 means Sunday and is stored as 0', () => {
    assert.deepEqual(parsed('0 0 * * 7').daysOfWeek, [0])
    assert.deepEqual(parsed('0 0 * * 5-7').daysOfWeek, [0, 5, 6])
    assert.deepEqual(parsed('0 0 * * 0-7').daysOfWeek, range(0, 6))
    assert.deepEqual(parsed('0 0 * * SUN,7').daysOfWeek, [0])
  })

  test('a day field that starts with * is unrestricted, even when stepped', () => {
    const expression = parsed('0 0 */2 * 1')
    assert.deepEqual(expression.daysOfMonth, range(1, 31).filter((day) => day % 2 === 1))
    assert.equal(expression.domRestricted, false)
    assert.equal(expression.dowRestricted, true)
  })

  test('surrounding and repeated whitespace between fields is allowed', () => {
    assert.deepEqual(parsed('  5\t4  *   * *  ').minutes, [5])
  })

  test('a minute of 60 is out of range', () => {
    assert.equal(errorOf('60 * * * *'), 'minute field "60": 60 is out of range 0-59')
  })

  test('four fields are rejected with the expected field order', () => {
    assert.equal(errorOf('* * * *'), 'expected 5 fields (minute hour day-of-month month day-of-week) but found 4')
  })

  test('six fields (seconds or years) are rejected', () => {
    assert.match(errorOf('0 0 0 * * *'), /expected 5 fields .* but found 6/)
  })

  test('a step of 0 is rejected', () => {
    assert.equal(errorOf('*/0 * * * *'), 'minute field "*/0": step must be at least 1')
  })

  test('a reversed range is rejected', () => {
    assert.equal(errorOf('5-2 * * * *'), 'minute field "5-2": range 5-2 is reversed; the start must not be after the end')
  })

  test('a step larger than the field is rejected', () => {
    assert.equal(errorOf('0 */25 * * *'), 'hour field "*/25": step 25 is larger than the field\'s range 0-23')
  })

  test('a single value with a step is rejected with the two forms that work', () => {
    assert.equal(errorOf('5/15 * * * *'), 'minute field "5/15": a step needs "*" or a range before "/"; write "5-59/15" or "*/15"')
  })

  test('out-of-range values are rejected in each field', () => {
    assert.equal(errorOf('0 24 * * *'), 'hour field "24": 24 is out of range 0-23')
    assert.equal(errorOf('0 0 0 * *'), 'day-of-month field "0": 0 is out of range 1-31')
    assert.equal(errorOf('0 0 32 * *'), 'day-of-month field "32": 32 is out of range 1-31')
    assert.equal(errorOf('0 0 * 13 *'), 'month field "13": 13 is out of range 1-12')
    assert.equal(errorOf('0 0 * * 8'), 'day-of-week field "8": 8 is out of range 0-7')
  })

  test('names are only accepted in their own field', () => {
    assert.equal(errorOf('0 0 * MON *'), 'month field "MON": unknown name "MON"; use JAN-DEC')
    assert.equal(errorOf('0 0 * * JAN'), 'day-of-week field "JAN": unknown name "JAN"; use SUN-SAT')
    assert.equal(errorOf('0 0 JAN * *'), 'day-of-month field "JAN": "JAN" is not a number')
  })

  test('empty list elements, macros and non-standard characters are rejected', () => {
    assert.equal(errorOf('1,,2 * * * *'), 'minute field "1,,2": empty list element; separate values with single commas')
    assert.match(errorOf('@daily'), /^macros such as @daily are not supported/)
    assert.equal(errorOf('0 0 ? * *'), 'day-of-month field "?": "?" is not a number')
    assert.equal(errorOf('0 0 L * *'), 'day-of-month field "L": "L" is not a number')
    assert.equal(errorOf('0 0 * * 5#3'), 'day-of-week field "5#3": "5#3" is not a number or name')
    assert.equal(errorOf('1-2-3 * * * *'), 'minute field "1-2-3": a range has exactly one "-" (write "a-b")')
    assert.equal(errorOf('*/2/3 * * * *'), 'minute field "*/2/3": only one "/" step is allowed')
    assert.equal(errorOf('-5 * * * *'), 'minute field "-5": a value is missing')
    assert.equal(errorOf('*/x * * * *'), 'minute field "*/x": step "x" must be a whole number')
  })

  test('a day that never exists in the listed months is rejected, as the schedule would never run', () => {
    assert.equal(errorOf('0 0 30 2 *'), 'day-of-month field "30": no listed day exists in month field "2" (FEB), so the schedule would never run')
    assert.equal(
      errorOf('0 0 31 apr,jun,sep,nov *'),
      'day-of-month field "31": no listed day exists in month field "apr,jun,sep,nov" (APR,JUN,SEP,NOV), so the schedule would never run',
    )
    assert.match(errorOf('0 0 30-31 2 */2'), /no listed day exists/)
  })

  test('days that exist only sometimes, or with a weekday alternative, are accepted', () => {
    assert.equal(cronExpressionError('0 0 29 2 *'), null)
    assert.equal(cronExpressionError('0 0 31 2,3 *'), null)
    assert.equal(cronExpressionError('0 0 30 2 MON'), null)
  })

  test('an empty schedule is rejected', () => {
    assert.match(errorOf('   '), /^the schedule is empty/)
  })

  test('cronExpressionError returns null for a valid expression and the message otherwise', () => {
    assert.equal(cronExpressionError('0 3 * * *'), null)
    assert.equal(cronExpressionError('60 * * * *'), 'minute field "60": 60 is out of range 0-59')
  })
})
