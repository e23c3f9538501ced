import type { SimulationResult, StrategyResult } from '../results.js';
import { formatCount, formatDuration, formatOffset } from './numbers.js';

/**
 * The simulation as a table for a terminal: one column per strategy; rows for each dependency's first
 * attempts and retries (and, for one that had an outage, the retries it received while down or degraded
 * and its busiest second in the two minutes after it recovered), the peak retry rate while a dependency
 * was down, attempts refused before calling, the queue operations the strategy caused, completions (with
 * and without a replay), dead letters by reason, time to drain and jobs lost; for a dependency with a
 * `rateLimit`, the 429s it answered, and, in a scenario with rate limits or limits, the throughput
 * (completed jobs per second until the drain). Plain text, no colour.
 *
 * @example
 * process.stdout.write(formatSummary(await simulate(defaultScenario())));
 */
export function formatSummary(result: SimulationResult): string {
  const lines: string[] = [];
  const jobs = result.strategies[0]?.jobs ?? 0;
  lines.push(
    `${result.scenario} (seed ${result.seed}): ${formatCount(jobs)} jobs, ${result.workers.count} workers × ${result.workers.concurrency} slots`,
  );
  if (result.description) lines.push(result.description);
  for (const d of result.dependencies) {
    const periods = d.unhealthy.map((p) => `${p.state} ${formatOffset(p.fromMs)}–${formatOffset(p.untilMs)}`);
    const notes = [periods.length > 0 ? periods.join(', ') : 'up throughout'];
    if (d.rateLimit)
      notes.push(
        `429 above ${formatCount(d.rateLimit.perSecond)}/s (Retry-After ${d.rateLimit.retryAfterSeconds} s)`,
      );
    if (d.limits) notes.push(`limits ${limitText(d.limits)}`);
    lines.push(`${d.name}: ${notes.join('; ')}`);
  }
  lines.push('');

  const strategies = result.strategies;
  const reasons = [...new Set(strategies.flatMap((s) => Object.keys(s.deadLettered)))].sort();
  const rows: [string, (s: StrategyResult) => string][] = [];
  for (const d of result.dependencies) {
    const counts = (s: StrategyResult) => s.requests[d.name];
    rows.push([`${d.name}: first attempts`, (s) => formatCount(counts(s)?.first ?? 0)]);
    rows.push([`${d.name}: retries`, (s) => formatCount(counts(s)?.retries ?? 0)]);
    if (d.rateLimit)
      rows.push([`${d.name}: rate-limited answers (429)`, (s) => formatCount(counts(s)?.rateLimited ?? 0)]);
    if (d.unhealthy.length > 0) {
      rows.push([`  while down or degraded`, (s) => formatCount(counts(s)?.retriesWhileDown ?? 0)]);
      rows.push([
        `${d.name}: peak calls/s, 2 min after recovery`,
        (s) => formatCount(counts(s)?.recoveryPeakPerSecond ?? 0),
      ]);
    }
  }
  rows.push(['peak retries/s while down', (s) => formatCount(s.peakRetriesPerSecond)]);
  rows.push(['refused before calling', (s) => formatCount(s.refused)]);
  rows.push(['queue operations', (s) => formatCount(s.queueOps)]);
  rows.push(['completed', (s) => formatCount(s.completed)]);
  rows.push(['  without a replay', (s) => formatCount(s.completedWithoutReplay)]);
  rows.push(['dead-lettered', (s) => formatCount(sum(Object.values(s.deadLettered)))]);
  for (const reason of reasons) rows.push([`  ${reason}`, (s) => formatCount(s.deadLettered[reason] ?? 0)]);
  rows.push(['time to drain', (s) => (s.unfinished > 0 ? 'not drained' : formatDuration(s.drainMs))]);
  if (strategies.some((s) => s.throughputPerSecond !== undefined))
    rows.push(['throughput (completed/s)', (s) => (s.throughputPerSecond ?? 0).toFixed(1)]);
  rows.push(['jobs lost', (s) => formatCount(s.lost)]);
  if (strategies.some((s) => s.unfinished > 0))
    rows.push(['unfinished at the horizon', (s) => formatCount(s.unfinished)]);

  const labelWidth = Math.max(...rows.map(([label]) => label.length));
  const widths = strategies.map((s) => Math.max(s.label.length, ...rows.map(([, cell]) => cell(s).length)));
  const row = (label: string, cells: string[]) =>
    `${label.padEnd(labelWidth)}  ${cells.map((c, i) => c.padStart(widths[i] as number)).join('   ')}`.trimEnd();
  lines.push(
    row(
      '',
      strategies.map((s) => s.label),
    ),
  );
  for (const [label, cell] of rows) lines.push(row(label, strategies.map(cell)));
  return `${lines.join('\n')}\n`;
}

/** `maxInFlight 25, 50/s`. */
function limitText(limits: { maxInFlight?: number; maxRatePerSecond?: number }): string {
  const parts: string[] = [];
  if (limits.maxInFlight !== undefined) parts.push(`maxInFlight ${formatCount(limits.maxInFlight)}`);
  if (limits.maxRatePerSecond !== undefined) parts.push(`${limits.maxRatePerSecond}/s`);
  return parts.join(', ') || 'none';
}

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
