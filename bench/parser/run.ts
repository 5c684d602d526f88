/**
 * `npm run bench:parser`: the data API's query parser on hostile inputs. Each case parses (or
 * refuses with a QueryParseError) the same shape of input at 256 KiB and at 1 MiB in the same
 * run; a linear parser takes about 4 times as long for 4 times the input, a quadratic one about
 * 16. The tests assert what these inputs parse to (data-api/query-parser.test.ts); how long
 * they take is measured here, never asserted in a test.
 *
 * Target: every case's 1 MiB / 256 KiB ratio at most 6 (linear with room for noise), and 1 MiB
 * well under a second on the development machine.
 */
import { performance } from 'node:perf_hooks'
import { QueryParseError } from '../../packages/platform/src/data-api/parse-errors.ts'
import { parseOrder, parsePrefer, parseReadRequest, parseSelect } from '../../packages/platform/src/data-api/query-parser.ts'

const read = (key: string, value: string) => parseReadRequest('items', new URLSearchParams([[key, value]]))

/** Each case as a function of the input size in bytes. */
const CASES: Record<string, (bytes: number) => () => unknown> = {
  'eq value': (n) => () => read('a', `eq.${'x'.repeat(n)}`),
  'in list': (n) => () => read('a', `in.(${'ab,'.repeat(n / 3)}c)`),
  'in list, quoted': (n) => () => read('a', `in.(${'"a,b",'.repeat(n / 6)}c)`),
  'select, many columns': (n) => () => parseSelect(Array.from({ length: n / 8 }, (_, i) => `c${i}`).join(',')),
  'select, one long name': (n) => () => parseSelect('x'.repeat(n)),
  'or, many terms': (n) => () => read('or', `(${Array.from({ length: n / 10 }, () => 'a.eq.1').join(',')})`),
  'or, nested and': (n) => () => read('or', `(${Array.from({ length: n / 20 }, () => 'and(a.eq.1,b.cs.{1,2})').join(',')})`),
  'or, unclosed quotes': (n) => () => read('or', `(${'a.eq."x,'.repeat(n / 8)}b.eq.1)`),
  'or, unclosed braces': (n) => () => read('or', `(${'a.cs.{x,'.repeat(n / 8)}b.eq.1)`),
  'order, many terms': (n) => () => parseOrder(Array.from({ length: n / 12 }, () => 'a.desc').join(',')),
  'prefer, many terms': (n) => () => parsePrefer(Array.from({ length: n / 12 }, () => 'count=exact').join(',')),
  'select, unterminated quote': (n) => () => parseSelect(`"${'x'.repeat(n)}`),
  'in, unterminated quote': (n) => () => read('a', `in.("${'x,'.repeat(n / 2)}`),
  'select, 100k open parens': (n) => () => parseSelect('('.repeat(n / 10)),
  'or, deep not.and': (n) => () => read('or', `(${'not.and('.repeat(n / 80)}`),
}

/** The best of `runs` timings of `run` (ms), after one warm-up. */
function best(run: () => unknown, runs = 5): number {
  const once = () => {
    const started = performance.now()
    try {
      run()
    } catch (error) {
      if (!(error instanceof QueryParseError)) throw error
    }
    return performance.now() - started
  }
  once()
  return Math.min(...Array.from({ length: runs }, once))
}

const SMALL = 256 * 1024
const LARGE = 1024 * 1024
const ratios: Record<string, number> = {}
const figures: Record<string, number> = {}
console.log('| case | 256 KiB ms | 1 MiB ms | 1 MiB / 256 KiB |')
console.log('| --- | ---: | ---: | ---: |')
for (const [name, make] of Object.entries(CASES)) {
  const small = best(make(SMALL))
  const large = best(make(LARGE))
  const ratio = large / Math.max(small, 0.001)
  ratios[name] = Math.round(ratio * 100) / 100
  figures[`${name} 1 MiB ms`] = Math.round(large * 100) / 100
  console.log(`| ${name} | ${small.toFixed(2)} | ${large.toFixed(2)} | ${ratio.toFixed(2)}x |`)
}
const worst = Math.max(...Object.values(ratios))
console.log(`\nworst ratio ${worst.toFixed(2)}x (linear is about 4x; target at most 6x)`)
console.log(JSON.stringify({ bench: 'parser', ratios, figures }))
