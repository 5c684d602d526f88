/**
 * Jobs over time by state as an inline SVG rendered here (no script, no library): one stacked
 * bar per bucket of creation time, coloured by each job's state now, with a legend. Fills are
 * stylesheet classes (`s-<state>`; the CSP allows no style attributes), labels are UTC times
 * the page script shows in local time, and each bar carries a title with its counts.
 */
import { escapeHtml } from '../lib/html.ts'
import type { JobTimeline, StateCounts } from '../jobs/index.ts'

const ORDER: ReadonlyArray<{ state: keyof StateCounts; text: string }> = [
  { state: 'succeeded', text: 'Succeeded' },
  { state: 'dead_lettered', text: 'Failed' },
  { state: 'retry_wait', text: 'Waiting to retry' },
  { state: 'running', text: 'Running' },
  { state: 'queued', text: 'Queued' },
]

const WIDTH = 760
const HEIGHT = 220
const PAD = { left: 40, right: 10, top: 12, bottom: 28 }

function total(counts: StateCounts): number {
  return ORDER.reduce((sum, { state }) => sum + counts[state], 0)
}

/** A round axis maximum at or above `max`. */
function niceMax(max: number): number {
  if (max <= 4) return 4
  const magnitude = 10 ** Math.floor(Math.log10(max))
  for (const step of [1, 2, 2.5, 5, 10]) if (step * magnitude >= max) return step * magnitude
  return 10 * magnitude
}

function bucketLabel(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} day${seconds === 86_400 ? '' : 's'}`
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`
  return `${Math.round(seconds / 60)} minutes`
}

export function jobsChart(timeline: JobTimeline): string {
  const buckets = timeline.buckets
  const max = niceMax(Math.max(0, ...buckets.map((bucket) => total(bucket.counts))))
  const plotWidth = WIDTH - PAD.left - PAD.right
  const plotHeight = HEIGHT - PAD.top - PAD.bottom
  const slot = plotWidth / Math.max(1, buckets.length)
  const barWidth = Math.max(1, slot * 0.72)
  const y = (value: number) => PAD.top + plotHeight - (value / max) * plotHeight
  const grid = [0, max / 2, max].map((value) =>
    `<line class="axis" x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${y(value).toFixed(1)}" y2="${y(value).toFixed(1)}"/>
     <text x="${PAD.left - 6}" y="${(y(value) + 4).toFixed(1)}" text-anchor="end">${escapeHtml(String(Math.round(value * 10) / 10))}</text>`).join('')
  const bars = buckets.map((bucket, i) => {
    const x = PAD.left + i * slot + (slot - barWidth) / 2
    let base = 0
    const parts = ORDER.filter(({ state }) => bucket.counts[state] > 0).map(({ state }) => {
      const top = base + bucket.counts[state]
      const rect = `<rect class="s-${state}" x="${x.toFixed(1)}" width="${barWidth.toFixed(1)}" y="${y(top).toFixed(1)}" height="${(y(base) - y(top)).toFixed(1)}"/>`
      base = top
      return rect
    }).join('')
    const summary = ORDER.filter(({ state }) => bucket.counts[state] > 0).map(({ state, text }) => `${bucket.counts[state]} ${text.toLowerCase()}`).join(', ')
    return `<g><title>${escapeHtml(`${bucket.start.slice(0, 16).replace('T', ' ')} UTC: ${summary || 'no jobs'}`)}</title>${parts}</g>`
  }).join('')
  const tickEvery = Math.max(1, Math.ceil(buckets.length / 6))
  const ticks = buckets.map((bucket, i) => i % tickEvery !== 0 ? '' :
    `<text x="${(PAD.left + i * slot + slot / 2).toFixed(1)}" y="${HEIGHT - 8}" text-anchor="middle" data-time="${escapeHtml(bucket.start)}">${escapeHtml(bucket.start.slice(5, 16).replace('T', ' '))}</text>`).join('')
  const count = buckets.reduce((sum, bucket) => sum + total(bucket.counts), 0)
  const legend = ORDER.map(({ state, text }) => `<span><i class="s-${state}"></i>${escapeHtml(text)}</span>`).join('')
  return `<div class="chart-wrap"><svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${escapeHtml(
    `Jobs created over time by state: ${count} jobs in ${buckets.length} buckets of ${bucketLabel(timeline.bucketSeconds)}`)}">
    ${grid}${bars}${ticks}</svg></div><div class="legend" aria-hidden="true">${legend}</div>
    <p class="muted small-text">Each bar counts the jobs created in ${escapeHtml(bucketLabel(timeline.bucketSeconds))}, by their state now.</p>`
}
