// Tests for next-occurrence maths: the DST rules in named zones (Berlin, New York, Lord
// Howe's 30-minute shift, and zones without DST), day matching, sparse and impossible
// schedules, and a property test against a brute-force minute-by-minute oracle.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { parseCronExpression, type CronExpression } from '../lib/cron-expression.ts'
import { CronScheduleError, latestOccurrence, nextOccurrences } from './next.ts'
import { formatInstant } from './zone-time.ts'

function next(expression: string, timezone: string, from: string, count: number): string[] {
  return nextOccurrences(expression, { timezone, from: new Date(from), count }).map((instant) => formatInstant(instant, timezone))
}

describe('nextOccurrences in Europe/Berlin', () => {
  test('a daily time in the spring-forward gap runs at 03:00, the first valid minute, then at its own time again', () => {
    assert.deepEqual(next('30 2 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', 3), [
      '2026-03-29T03:00:00+02:00',
      '2026-03-30T02:30:00+02:00',
      '2026-03-31T02:30:00+02:00',
    ])
  })

  test('skipped minutes and a matching 03:00 run once at 03:00', () => {
    assert.deepEqual(next('0,30 2,3 * * *', 'Europe/Berlin', '2026-03-28T23:00:00Z', 3), [
      '2026-03-29T03:00:00+02:00',
      '2026-03-29T03:30:00+02:00',
      '2026-03-30T02:00:00+02:00',
    ])
    assert.deepEqual(next('*/15 * * * *', 'Europe/Berlin', '2026-03-29T00:30:00Z', 3), [
      '2026-03-29T01:45:00+01:00',
      '2026-03-29T03:00:00+02:00',
      '2026-03-29T03:15:00+02:00',
    ])
  })

  test('a daily time in the repeated hour runs once, at its first instance', () => {
    assert.deepEqual(next('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 2), [
      '2026-10-25T02:30:00+02:00',
      '2026-10-26T02:30:00+01:00',
    ])
  })

  test('a frequent schedule does not run again in the second pass of the repeated hour', () => {
    assert.deepEqual(next('*/30 * * * *', 'Europe/Berlin', '2026-10-24T23:00:00Z', 5), [
      '2026-10-25T01:30:00+02:00',
      '2026-10-25T02:00:00+02:00',
      '2026-10-25T02:30:00+02:00',
      '2026-10-25T03:00:00+01:00',
      '2026-10-25T03:30:00+01:00',
    ])
  })

  test('asked from inside the second pass, the next run is after the repeated hour', () => {
    // 01:15Z is 02:15 +01:00, the second 02:15; the second 02:30 and 02:45 do not run.
    assert.deepEqual(next('*/15 * * * *', 'Europe/Berlin', '2026-10-25T01:15:00Z', 2), ['2026-10-25T03:00:00+01:00', '2026-10-25T03:15:00+01:00'])
  })
})

describe('nextOccurrences in America/New_York', () => {
  test('02:30 on the spring-forward Sunday runs at 03:00 EDT', () => {
    assert.deepEqual(next('30 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', 2), [
      '2026-03-08T03:00:00-04:00',
      '2026-03-09T02:30:00-04:00',
    ])
  })

  test('01:30 on the fall-back Sunday runs once, in EDT', () => {
    assert.deepEqual(next('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2), [
      '2026-11-01T01:30:00-04:00',
      '2026-11-02T01:30:00-05:00',
    ])
  })
})

describe('nextOccurrences in Australia/Lord_Howe (30-minute shift)', () => {
  test('02:00 and 02:15, skipped when the clocks go from 02:00 to 02:30, run at 02:30', () => {
    assert.deepEqual(next('0 2 * * *', 'Australia/Lord_Howe', '2026-10-03T00:00:00Z', 2), [
      '2026-10-04T02:30:00+11:00',
      '2026-10-05T02:00:00+11:00',
    ])
    assert.deepEqual(next('15 2 * * *', 'Australia/Lord_Howe', '2026-10-03T00:00:00Z', 1), ['2026-10-04T02:30:00+11:00'])
    assert.deepEqual(next('*/15 * * * *', 'Australia/Lord_Howe', '2026-10-03T14:40:00Z', 5), [
      '2026-10-04T01:15:00+10:30',
      '2026-10-04T01:30:00+10:30',
      '2026-10-04T01:45:00+10:30',
      '2026-10-04T02:30:00+11:00',
      '2026-10-04T02:45:00+11:00',
    ])
  })

  test('01:30-01:59, repeated when the clocks go from 02:00 back to 01:30, run once', () => {
    assert.deepEqual(next('*/15 1 * * *', 'Australia/Lord_Howe', '2026-04-04T13:00:00Z', 5), [
      '2026-04-05T01:00:00+11:00',
      '2026-04-05T01:15:00+11:00',
      '2026-04-05T01:30:00+11:00',
      '2026-04-05T01:45:00+11:00',
      '2026-04-06T01:00:00+10:30',
    ])
  })
})

describe('nextOccurrences in zones without DST', () => {
  test('Asia/Kolkata (+05:30) runs every day at the same UTC instant all year', () => {
    const runs = nextOccurrences('0 9 * * *', { timezone: 'Asia/Kolkata', from: new Date('2026-01-01T00:00:00Z'), count: 365 })
    assert.equal(runs.length, 365)
    for (const [index, run] of runs.entries()) {
      assert.equal(run.getTime(), Date.parse('2026-01-01T03:30:00Z') + index * 86_400_000)
    }
    assert.equal(formatInstant(runs[0]!, 'Asia/Kolkata'), '2026-01-01T09:00:00+05:30')
  })

  test('UTC is the default zone', () => {
    assert.deepEqual(
      nextOccurrences('0 0 * * *', { from: new Date('2026-03-28T12:00:00Z'), count: 2 }).map((d) => d.toISOString()),
      ['2026-03-29T00:00:00.000Z', '2026-03-30T00:00:00.000Z'],
    )
  })
})

describe('a daily schedule with an explicit zone runs once per local date', () => {
  for (const zone of ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'America/Havana', 'Pacific/Chatham']) {
    test(`at every quarter hour of the day in ${zone}, through 2026`, () => {
      for (let hour = 0; hour < 24; hour++) {
        for (const minute of [0, 15, 30, 45]) {
          const runs = nextOccurrences(`${minute} ${hour} * * *`, { timezone: zone, from: new Date('2025-12-31T09:00:00Z'), count: 400 })
          const dates = runs.map((run) => formatInstant(run, zone).slice(0, 10)).filter((date) => date.startsWith('2026-'))
          assert.equal(dates.length, 365, `${minute} ${hour} in ${zone}`)
          assert.equal(new Set(dates).size, 365, `${minute} ${hour} in ${zone}`)
        }
      }
    })
  }
})

describe('day matching', () => {
  test('when both day fields are restricted a day matches either (the 13th or a Friday)', () => {
    assert.deepEqual(next('0 0 13 * FRI', 'UTC', '2026-01-01T00:00:00Z', 4), [
      '2026-01-02T00:00:00+00:00',
      '2026-01-09T00:00:00+00:00',
      '2026-01-13T00:00:00+00:00',
      '2026-01-16T00:00:00+00:00',
    ])
  })

  test('a day-of-month field starting with * must match together with the weekday', () => {
    // Odd days that are Fridays: 2026-01-09, 01-23, 01-30 are Fridays; 9, 23 odd; 30 even.
    assert.deepEqual(next('0 0 */2 * FRI', 'UTC', '2026-01-01T00:00:00Z', 3), [
      '2026-01-09T00:00:00+00:00',
      '2026-01-23T00:00:00+00:00',
      '2026-02-13T00:00:00+00:00',
    ])
  })

  test('month and weekday names work, Sunday as 0 and 7', () => {
    assert.deepEqual(next('0 12 * jun sun', 'UTC', '2026-01-01T00:00:00Z', 2), next('0 12 * 6 7', 'UTC', '2026-01-01T00:00:00Z', 2))
    assert.deepEqual(next('0 12 * jun sun', 'UTC', '2026-01-01T00:00:00Z', 1), ['2026-06-07T12:00:00+00:00'])
  })
})

describe('sparse and impossible schedules', () => {
  test('29 February runs in leap years only', () => {
    assert.deepEqual(next('0 0 29 2 *', 'UTC', '2026-01-01T00:00:00Z', 3), [
      '2028-02-29T00:00:00+00:00',
      '2032-02-29T00:00:00+00:00',
      '2036-02-29T00:00:00+00:00',
    ])
  })

  test('29 February on a Sunday is found decades ahead, across the non-leap 2100', () => {
    assert.deepEqual(next('0 0 29 2 */7', 'UTC', '2090-01-01T00:00:00Z', 2), [
      '2128-02-29T00:00:00+00:00',
      '2156-02-29T00:00:00+00:00',
    ])
  })

  test('the 31st runs only in months that have one', () => {
    assert.deepEqual(next('0 0 31 * *', 'UTC', '2026-01-01T00:00:00Z', 4).map((d) => d.slice(0, 10)), [
      '2026-01-31',
      '2026-03-31',
      '2026-05-31',
      '2026-07-31',
    ])
  })

  test('a date that never exists is rejected with a message rather than searched for', () => {
    assert.throws(() => nextOccurrences('0 0 30 2 *', { from: new Date(), count: 1 }), (error: unknown) => {
      assert.ok(error instanceof CronScheduleError)
      assert.match(error.message, /day-of-month field "30": no listed day exists in month field "2" \(FEB\), so the schedule would never run/)
      return true
    })
    assert.equal(parseCronExpression('0 0 31 4,6,9,11 *').ok, false)
    // With both day fields restricted the weekday can still match: Mondays in February.
    assert.equal(next('0 0 30 2 MON', 'UTC', '2026-01-01T00:00:00Z', 1)[0], '2026-02-02T00:00:00+00:00')
  })

  test('an already parsed expression is accepted, and count 0 returns nothing', () => {
    const result = parseCronExpression('0 6 * * *')
    assert.ok(result.ok)
    assert.deepEqual(nextOccurrences(result.expression, { from: new Date('2026-01-01T00:00:00Z'), count: 1 }), [new Date('2026-01-01T06:00:00Z')])
    assert.deepEqual(nextOccurrences(result.expression, { from: new Date('2026-01-01T00:00:00Z'), count: 0 }), [])
  })

  test('occurrences are strictly after from', () => {
    assert.deepEqual(next('0 6 * * *', 'UTC', '2026-01-01T06:00:00Z', 1), ['2026-01-02T06:00:00+00:00'])
    assert.deepEqual(next('0 6 * * *', 'UTC', '2026-01-01T05:59:59.999Z', 1), ['2026-01-01T06:00:00+00:00'])
  })

  test('the search stops at the end of year 9999', () => {
    assert.deepEqual(next('0 0 1 1 *', 'UTC', '9998-06-01T00:00:00Z', 5), ['9999-01-01T00:00:00+00:00'])
  })

  test('bad zones, dates and counts fail with CronScheduleError', () => {
    const from = new Date('2026-01-01T00:00:00Z')
    assert.throws(() => nextOccurrences('0 0 * * *', { timezone: 'Mars/Olympus', from, count: 1 }), CronScheduleError)
    assert.throws(() => nextOccurrences('0 0 * * *', { from: new Date('nope'), count: 1 }), /from is not a valid date/)
    assert.throws(() => nextOccurrences('0 0 * * *', { from: new Date('1960-01-01T00:00:00Z'), count: 1 }), /from must be between/)
    assert.throws(() => nextOccurrences('0 0 * * *', { from, count: -1 }), /count must be a whole number/)
    assert.throws(() => nextOccurrences('61 0 * * *', { from, count: 1 }), /"61 0 \* \* \*" is not a valid cron schedule: minute field/)
  })
})

describe('latestOccurrence', () => {
  test('returns the latest run in (after, upTo], or null', () => {
    const at = (iso: string) => new Date(iso)
    assert.deepEqual(latestOccurrence('0 * * * *', { after: at('2026-01-01T00:00:00Z'), upTo: at('2026-01-01T05:30:00Z') }), at('2026-01-01T05:00:00Z'))
    assert.deepEqual(latestOccurrence('0 * * * *', { after: at('2026-01-01T00:00:00Z'), upTo: at('2026-01-01T05:00:00Z') }), at('2026-01-01T05:00:00Z'))
    assert.equal(latestOccurrence('0 * * * *', { after: at('2026-01-01T05:00:00Z'), upTo: at('2026-01-01T05:59:00Z') }), null)
    assert.equal(latestOccurrence('0 0 29 2 *', { after: at('2026-01-01T00:00:00Z'), upTo: at('2026-01-02T00:00:00Z') }), null)
  })

  test('inside the second pass of a repeated hour it finds the run of the first pass', () => {
    // 06:40Z is 01:40 EST, the second 01:40; 01:30 ran at 05:30Z (EDT).
    assert.deepEqual(
      latestOccurrence('30 1 * * *', { timezone: 'America/New_York', after: new Date('2026-11-01T00:00:00Z'), upTo: new Date('2026-11-01T06:40:00Z') }),
      new Date('2026-11-01T05:30:00Z'),
    )
  })

  test('a run moved out of the gap counts at the instant it moved to', () => {
    const options = { timezone: 'Europe/Berlin', after: new Date('2026-03-28T12:00:00Z') }
    assert.equal(latestOccurrence('30 2 * * *', { ...options, upTo: new Date('2026-03-29T00:59:59Z') }), null)
    assert.deepEqual(latestOccurrence('30 2 * * *', { ...options, upTo: new Date('2026-03-29T01:00:00Z') }), new Date('2026-03-29T01:00:00Z'))
  })
})

// ---------------------------------------------------------------------------------------
// Property test: the field-jumping search against a brute-force oracle that steps through
// every UTC minute, reads the wall clock with its own Intl formatter and applies the rules
// literally: a matching wall minute runs at the first instant the wall shows it; matching
// wall minutes the clock jumps over run at the first instant after the jump.

const ORACLE_ZONES = [
  'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata',
  'America/Havana', 'Pacific/Chatham', 'America/Santiago', 'Asia/Tehran',
]

function wallReader(zone: string): (instant: number) => number {
  const format = new Intl.DateTimeFormat('sv-SE', {
    timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hour12: false,
  })
  return (instant) => Date.parse(format.format(instant).replace(' ', 'T') + 'Z')
}

function matches(expression: CronExpression, wall: number): boolean {
  const date = new Date(wall)
  const dom = expression.daysOfMonth.includes(date.getUTCDate())
  const dow = expression.daysOfWeek.includes(date.getUTCDay())
  const day = expression.domRestricted && expression.dowRestricted ? dom || dow : dom && dow
  return day && expression.minutes.includes(date.getUTCMinutes()) && expression.hours.includes(date.getUTCHours())
    && expression.months.includes(date.getUTCMonth() + 1)
}

/** Wall readings for every UTC minute of [start, end). */
function walls(zone: string, start: number, end: number): number[] {
  const read = wallReader(zone)
  const list: number[] = []
  for (let instant = start; instant < end; instant += 60_000) list.push(read(instant))
  return list
}

function oracle(expression: CronExpression, start: number, wallList: readonly number[]): number[] {
  const seen = new Set<number>()
  const runs: number[] = []
  for (const [index, wall] of wallList.entries()) {
    const instant = start + index * 60_000
    let runsHere = matches(expression, wall) && !seen.has(wall)
    const previous = index > 0 ? wallList[index - 1]! : wall - 60_000
    for (let skipped = previous + 60_000; skipped < wall && !runsHere; skipped += 60_000) {
      runsHere = matches(expression, skipped)
    }
    if (runsHere) runs.push(instant)
    seen.add(wall)
  }
  return runs
}

/** Instants in 2026 (hour precision) where the zone's offset changes; none for zones without DST. */
function transitions(zone: string): number[] {
  const read = wallReader(zone)
  const found: number[] = []
  const start = Date.parse('2026-01-01T00:00:00Z')
  let offset = read(start) - start
  for (let instant = start; instant < Date.parse('2027-01-01T00:00:00Z'); instant += 3_600_000) {
    const now = read(instant) - instant
    if (now !== offset) found.push(instant)
    offset = now
  }
  return found.length > 0 ? found : [Date.parse('2026-06-15T00:00:00Z')]
}

function randomExpression(random: () => number): string {
  const pick = <T,>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
  const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1))
  const minute = pick(['*', `*/${int(1, 30)}`, `${int(0, 59)}`, `${int(0, 29)}-${int(30, 59)}/${int(1, 20)}`, `${int(0, 14)},${int(15, 44)},${int(45, 59)}`, '0,30', '15,45'])
  const hour = pick(['*', `*/${int(1, 6)}`, `${int(0, 4)}`, `${int(0, 2)}-${int(2, 5)}`, `${int(0, 3)},${int(20, 23)}`, '1,2,3', '0'])
  const dom = pick(['*', '*', `${int(1, 28)}`, `${int(1, 10)}-${int(11, 31)}`, '*/2'])
  const dow = pick(['*', '*', `${int(0, 6)}`, 'MON-FRI', 'SUN,SAT', '*/3'])
  return `${minute} ${hour} ${dom} * ${dow}`
}

function seeded(seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648
    return state / 2_147_483_648
  }
}

describe('nextOccurrences and latestOccurrence against a minute-by-minute oracle', () => {
  for (const zone of ORACLE_ZONES) {
    test(`random schedules around every 2026 offset change in ${zone}`, () => {
      const random = seeded(zone.length * 7919)
      for (const transition of transitions(zone)) {
        const start = transition - 2 * 86_400_000
        const end = transition + 2 * 86_400_000
        const wallList = walls(zone, start, end)
        const from = transition - 86_400_000 + Math.floor(random() * 120) * 60_000
        for (let sample = 0; sample < 40; sample++) {
          const text = randomExpression(random)
          const parsed = parseCronExpression(text)
          assert.ok(parsed.ok, text)
          const expected = oracle(parsed.expression, start, wallList).filter((run) => run > from && run < end)
          const actual = nextOccurrences(text, { timezone: zone, from: new Date(from), count: expected.length + 1 })
            .map((run) => run.getTime())
            .filter((run) => run < end)
          assert.deepEqual(actual.map((run) => new Date(run).toISOString()), expected.map((run) => new Date(run).toISOString()), `${text} in ${zone} from ${new Date(from).toISOString()}`)

          const upTo = transition - 6 * 3_600_000 + Math.floor(random() * 720) * 60_000
          const after = upTo - (1 + Math.floor(random() * 24)) * 3_600_000
          const latest = expected.concat(oracle(parsed.expression, start, wallList).filter((run) => run <= from))
            .filter((run) => run > after && run <= upTo)
            .sort((a, b) => a - b)
            .at(-1) ?? null
          const found = latestOccurrence(text, { timezone: zone, after: new Date(after), upTo: new Date(upTo) })
          assert.equal(found?.toISOString() ?? null, latest === null ? null : new Date(latest).toISOString(), `latest ${text} in ${zone} in (${new Date(after).toISOString()}, ${new Date(upTo).toISOString()}]`)
        }
      }
    })
  }
})
