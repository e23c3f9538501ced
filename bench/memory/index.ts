/**
 * Memory per distinct dependency name: unmapped job names become dependencies, so a process may meet
 * 100 000 of them. Each store is fed `--names` distinct names, one outcome each, and the heap is measured
 * after a full GC. Two runs side by side: "all live" (a frozen clock: every name is still in its window,
 * so nothing may be forgotten: the cost of live state), and "streamed" (the clock moves a millisecond per
 * name, so names older than two windows expire as they would in Redis: the bound the stores keep).
 *
 *   npx tsx --expose-gc bench/memory/index.ts [--names 100000] [--json]
 */
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { MemoryBreakerStore } from '../../src/breaker/memory-store.js';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { MemoryBudgetStore } from '../../src/budget/memory-store.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { FakeClock } from '../../src/common/clock.js';
import { benchArgs, formatTable } from '../common.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  process.stderr.write('run with node --expose-gc (npx tsx --expose-gc bench/memory/index.ts)\n');
  process.exit(2);
}
const { size: names, json } = benchArgs({ size: ['names', 100_000] });

function heapMb(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed / 1_048_576;
}

/** Heap growth (MB) after feeding `names` names to what `build` returns, the clock stepping `stepMs`. */
async function measure(stepMs: number, build: (clock: FakeClock) => (name: string) => Promise<unknown>) {
  const clock = new FakeClock(1_700_000_000_000);
  const before = heapMb();
  const feed = build(clock);
  for (let i = 0; i < names; i++) {
    await feed(`job-${i}`);
    clock.advance(stepMs);
  }
  const grown = heapMb() - before;
  (feed as unknown as { keep?: unknown }).keep = feed; // the store stays reachable until measured
  return Math.max(0, grown);
}

const breakerOptions = resolveBreakerOptions({ windowMs: 1_000, coolDownMs: 1_000 });
const subjects: [string, (clock: FakeClock) => (name: string) => Promise<unknown>][] = [
  [
    'MemoryBreakerStore (a failure per name)',
    (clock) => {
      const store = new MemoryBreakerStore({ clock });
      return (name) => store.record(name, 'failure', breakerOptions);
    },
  ],
  [
    'CircuitBreaker (an execute per name)',
    (clock) => {
      const breaker = new CircuitBreaker({ clock, windowMs: 1_000, coolDownMs: 1_000 });
      return (name) => breaker.execute(name, () => 1);
    },
  ],
  [
    'MemoryBudgetStore via RetryBudget (a spend per name)',
    (clock) => {
      const budget = new RetryBudget({ store: new MemoryBudgetStore({ clock }), clock, windowMs: 1_000 });
      return (name) => Promise.resolve(budget.trySpend(name));
    },
  ],
];

const rows: { subject: string; allLiveMb: number; streamedMb: number }[] = [];
for (const [subject, build] of subjects) {
  const allLiveMb = await measure(0, build);
  const streamedMb = await measure(1, build);
  rows.push({
    subject,
    allLiveMb: Math.round(allLiveMb * 10) / 10,
    streamedMb: Math.round(streamedMb * 10) / 10,
  });
}
if (json) process.stdout.write(`${JSON.stringify({ names, rows }, null, 2)}\n`);
else
  process.stdout.write(
    `heap grown by ${names.toLocaleString('en')} distinct dependency names, MB (windows and cool-downs of 1 s; streamed: the clock steps 1 ms per name)\n\n${formatTable(
      [
        ['subject', 'all live', 'streamed'],
        ...rows.map((r) => [r.subject, r.allLiveMb.toFixed(1), r.streamedMb.toFixed(1)]),
      ],
    )}\n`,
  );
