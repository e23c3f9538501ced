/**
 * The console's two hot reads over one fleet holding a seeded queue `index`: the first page of a filtered
 * dead-letter list (with its `matching` count), over HTTP against the console's own handler, and one
 * overview update (`readFleetStatus`, the read each live tick makes). Every answer is checked against what
 * the seed holds before it is timed.
 */
import { createServer } from 'node:http';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { createDashboard } from '../../src/dashboard/handler.js';
import type { Fleet } from '../../src/status/fleet.js';
import { readFleetStatus } from '../../src/status/read-fleet-status.js';
import type { FleetStatusSources } from '../../src/status/types.js';
import { isRare } from './records.js';

/** The dependencies the fleet has budget and breaker state for: the two the dead letters name, and more. */
export const DEPENDENCIES = ['search', 'rare-dep', 'mail', 'crm', 'payments'];

/** Budget and breaker state for every one of {@link DEPENDENCIES}. */
export async function writeDependencyState(fleet: Fleet): Promise<void> {
  const budget = new RetryBudget({ store: fleet.budget });
  for (const dependency of DEPENDENCIES) {
    budget.recordSuccess(dependency, 100);
    await budget.trySpend(dependency);
    await fleet.breaker.record(dependency, 'success', resolveBreakerOptions({}));
  }
  await budget.close();
}

/** Median and 95th percentile (nearest rank) of a run of samples, ms. */
export interface Spread {
  median: number;
  p95: number;
}

export function spreadOf(samples: number[]): Spread {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, p95: at(0.95) };
}

/**
 * The first pages measured: the query, which record indexes it matches, and whether the page counts them
 * (with two fields it says "more" instead).
 */
export const PAGES: { label: string; query: string; matches: (i: number) => boolean; counted: boolean }[] = [
  { label: 'reason (1 %)', query: 'reason=permanent', matches: isRare, counted: true },
  { label: 'dependency (1 %)', query: 'dependency=rare-dep', matches: isRare, counted: true },
  { label: 'job name (1 %)', query: 'name=rare-job', matches: isRare, counted: true },
  { label: 'reason (99 %)', query: 'reason=budget-exhausted', matches: (i) => !isRare(i), counted: true },
  { label: 'no filter', query: '', matches: () => true, counted: true },
  {
    label: 'reason + dependency (1 %)',
    query: 'reason=permanent&dependency=rare-dep',
    matches: isRare,
    counted: false,
  },
];

function rareCount(n: number): number {
  return n === 0 ? 0 : Math.floor((n - 1) / 100) + 1;
}

export interface Measured {
  pages: Record<string, Spread>;
  overview: Spread;
  /** Extra overview figures a backend adds (the Redis baseline listing by SCAN). */
  extra: Record<string, Spread>;
}

/**
 * Serves the console over `fleet` and times `rounds` rounds of every page and one overview update each,
 * alternated so load on the machine falls on all of them alike. `extraOverview` is timed beside the
 * overview for the first `extraRounds` rounds.
 */
export async function measure(
  fleet: Fleet,
  n: number,
  rounds: number,
  extraOverview: Record<string, { sources: FleetStatusSources; rounds: number }> = {},
): Promise<Measured> {
  const handler = createDashboard({ fleet });
  const http = createServer(handler);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  const address = http.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  try {
    const page = async (query: string) => {
      const res = await fetch(`${base}/api/queues/index/records?limit=50${query ? `&${query}` : ''}`);
      const body = (await res.json()) as { records?: { id: string }[]; matching?: number; error?: string };
      if (!res.ok) throw new Error(`${query}: HTTP ${res.status} ${body.error}`);
      return body;
    };
    // Checked once: the page is full, newest first, and the count is the seed's.
    for (const { query, matches, counted } of PAGES) {
      const body = await page(query);
      const expected: string[] = [];
      let matching = 0;
      for (let i = n - 1; i >= 0; i--)
        if (matches(i)) {
          matching++;
          if (expected.length < 50) expected.push(String(i + 1));
        }
      const got = (body.records ?? []).map((r) => r.id);
      if (JSON.stringify(got) !== JSON.stringify(expected))
        throw new Error(`page "${query}": ids ${got.slice(0, 3)}… expected ${expected.slice(0, 3)}…`);
      if (body.matching !== (counted ? matching : undefined))
        throw new Error(
          `page "${query}": matching ${body.matching}, expected ${counted ? matching : 'none'}`,
        );
    }
    const first = await readFleetStatus(fleet.status);
    const queue = first.queues.find((q) => q.queue === 'index');
    if (first.dependencies.length !== DEPENDENCIES.length || first.errors.length > 0 || queue?.count !== n)
      throw new Error(
        `overview read ${JSON.stringify({ dependencies: first.dependencies.map((d) => d.dependency), errors: first.errors, count: queue?.count })}`,
      );
    if (queue.byReason.permanent !== rareCount(n) || queue.byDependency['rare-dep'] !== rareCount(n))
      throw new Error(`overview counts ${JSON.stringify(queue)}`);

    const pageSamples = Object.fromEntries(PAGES.map((p) => [p.label, [] as number[]]));
    const overviewSamples: number[] = [];
    const extraSamples = Object.fromEntries(Object.keys(extraOverview).map((k) => [k, [] as number[]]));
    for (let round = 0; round < rounds; round++) {
      for (const { label, query } of PAGES) {
        const t0 = performance.now();
        await page(query);
        pageSamples[label]!.push(performance.now() - t0);
      }
      let t0 = performance.now();
      await readFleetStatus(fleet.status);
      overviewSamples.push(performance.now() - t0);
      for (const [label, extra] of Object.entries(extraOverview)) {
        if (round >= extra.rounds) continue;
        t0 = performance.now();
        await readFleetStatus(extra.sources);
        extraSamples[label]!.push(performance.now() - t0);
      }
    }
    return {
      pages: Object.fromEntries(Object.entries(pageSamples).map(([k, v]) => [k, spreadOf(v)])),
      overview: spreadOf(overviewSamples),
      extra: Object.fromEntries(Object.entries(extraSamples).map(([k, v]) => [k, spreadOf(v)])),
    };
  } finally {
    http.close();
    await handler.close();
  }
}
