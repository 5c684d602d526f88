// Tests for IANA time zone name validation.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { isValidTimeZone } from './time-zone.ts'

test('canonical IANA zones are valid', () => {
  for (const zone of ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'America/Argentina/Buenos_Aires', 'Etc/GMT+1']) {
    assert.equal(isValidTimeZone(zone), true, zone)
  }
})

test('UTC, Etc/UTC and legacy aliases are valid', () => {
  for (const zone of ['UTC', 'Etc/UTC', 'US/Eastern', 'Asia/Calcutta']) {
    assert.equal(isValidTimeZone(zone), true, zone)
  }
})

test('unknown zones, offsets and case-folded names are invalid', () => {
  for (const zone of ['Mars/Olympus', '+01:00', 'europe/berlin', 'utc', '', 'Europe/', 'Europe/Berlin ']) {
    assert.equal(isValidTimeZone(zone), false, zone)
  }
})
