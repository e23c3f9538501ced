/**
 * The hottest key: one dependency's retry budget is one Redis key, so one slot on one core. 8 processes ×
 * 64 concurrent callers ask that one dependency for retries for a few seconds, on a redis-server of the
 * run's own, in two ways, interleaved round by round:
 *
 * - `shared`: one RetryBudget per process, as deployed: requests that arrive while a call for the dependency
 *   is in flight wait for it and then share the next call (one round trip decides them all, in order);
 * - `unshared`: a RetryBudget per caller, so every decision is its own round trip (the baseline).
 *
 * Prints decisions/s, round trips (budget script calls, INFO commandstats) per decision and the round trips
 * sharing saved, Redis CPU µs per decision and per round trip (INFO cpu: that one key is all the server
 * does), and how busy the Redis core was. From those: the ceiling of one dependency on one Redis core.
 *
 *   npx tsx bench/hot-key/index.ts [--seconds 5] [--rounds 3] [--processes 8] [--callers 64] [--quick] [--json]
 *
 * `--quick`: 2 s runs, one round.
 */
import { parseArgs } from 'node:util';
import { IpcProcess, nowMs } from '../../tests/helpers/ipc-process.js';
import { formatTable, median } from '../common.js';
import { difference, startTarget } from '../redis-target.js';
import type { HotKeyRun } from './caller-process.js';

type Mode = 'shared' | 'unshared';
const MODES: Mode[] = ['shared', 'unshared'];

interface Measurement {
  decisionsPerSecond: number;
  roundTripsPerDecision: number;
  redisCpuMicrosPerDecision: number;
  redisCpuMicrosPerRoundTrip: number;
  /** Redis CPU seconds per wall second: 1 is one core fully used. */
  redisCoreBusy: number;
  degraded: number;
}

const options = args();
const target = await startTarget('redis');
const fleet = Array.from(
  { length: options.processes },
  () => new IpcProcess(new URL('./caller-process.ts', import.meta.url), [JSON.stringify(target.address)]),
);
let runs = 0;

async function measure(mode: Mode, seconds: number): Promise<Measurement> {
  const startAt = nowMs() + 300;
  const run: HotKeyRun = {
    dependency: `hot-${runs++}`,
    callers: options.callers,
    shared: mode === 'shared',
    startAt,
    stopAt: startAt + seconds * 1_000,
  };
  const before = await target.counters();
  const done = await Promise.all(fleet.map((p) => p.request({ type: 'run', run }, 'done', 120_000)));
  const used = difference(before, await target.counters());
  const decisions = done.reduce((sum, d) => sum + (d.decisions as number), 0);
  const span = (Math.max(...done.map((d) => d.endedAt as number)) - startAt) / 1_000;
  const roundTrips = (used.commands.evalsha ?? 0) + (used.commands.eval ?? 0);
  return {
    decisionsPerSecond: decisions / span,
    roundTripsPerDecision: roundTrips / decisions,
    redisCpuMicrosPerDecision: (used.cpuSeconds * 1e6) / decisions,
    redisCpuMicrosPerRoundTrip: (used.cpuSeconds * 1e6) / roundTrips,
    redisCoreBusy: used.cpuSeconds / span,
    degraded: done.reduce((sum, d) => sum + (d.degraded as number), 0),
  };
}

const results: Record<Mode, Measurement[]> = { shared: [], unshared: [] };
try {
  await Promise.all(fleet.map((p) => p.next('up')));
  for (const mode of MODES) await measure(mode, 1); // warm-up, discarded
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? MODES : [...MODES].reverse();
    for (const mode of order) {
      process.stderr.write(`round ${round + 1}: ${mode}\n`);
      results[mode].push(await measure(mode, options.seconds));
    }
  }
} finally {
  await Promise.all(fleet.map((p) => p.close()));
  await target.close();
}

const figure = (mode: Mode, key: keyof Measurement) => median(results[mode].map((r) => r[key]));
const rows = MODES.map((mode) => ({
  mode,
  decisionsPerSecond: Math.round(figure(mode, 'decisionsPerSecond')),
  roundTripsPerDecision: Number(figure(mode, 'roundTripsPerDecision').toFixed(4)),
  redisCpuMicrosPerDecision: Number(figure(mode, 'redisCpuMicrosPerDecision').toFixed(2)),
  redisCpuMicrosPerRoundTrip: Number(figure(mode, 'redisCpuMicrosPerRoundTrip').toFixed(2)),
  redisCoreBusy: Number(figure(mode, 'redisCoreBusy').toFixed(2)),
  degradedDecisions: results[mode].reduce((sum, r) => sum + r.degraded, 0),
}));
const [shared, unshared] = rows as [(typeof rows)[0], (typeof rows)[0]];
const summary = {
  roundTripsSavedPercent: Number((100 * (1 - shared.roundTripsPerDecision)).toFixed(1)),
  decisionsPerRoundTripShared: Number((1 / shared.roundTripsPerDecision).toFixed(1)),
  // One Redis core does at most 1 s of CPU per second: the ceiling is 1 s over the CPU one decision costs.
  ceilingUnsharedPerCore: Math.round(1e6 / unshared.redisCpuMicrosPerDecision),
  ceilingSharedPerCore: Math.round(1e6 / shared.redisCpuMicrosPerDecision),
};

if (options.json) {
  const { seconds, rounds, processes, callers } = options;
  process.stdout.write(
    `${JSON.stringify({ seconds, rounds, processes, callers, server: target.server, rows, summary }, null, 2)}\n`,
  );
} else {
  process.stdout.write(
    `${options.processes} processes × ${options.callers} callers on one dependency, ${options.seconds} s runs, median of ${options.rounds} interleaved round(s); ${target.server}\n\n`,
  );
  const header = [
    'mode',
    'decisions/s',
    'round trips/decision',
    'Redis µs/decision',
    'Redis µs/round trip',
    'Redis core busy',
    'degraded',
  ];
  const table = rows.map((r) => [
    r.mode,
    String(r.decisionsPerSecond),
    r.roundTripsPerDecision.toFixed(4),
    r.redisCpuMicrosPerDecision.toFixed(2),
    r.redisCpuMicrosPerRoundTrip.toFixed(2),
    r.redisCoreBusy.toFixed(2),
    String(r.degradedDecisions),
  ]);
  process.stdout.write(`${formatTable([header, ...table])}\n\n`);
  process.stdout.write(
    `request sharing saved ${summary.roundTripsSavedPercent} % of round trips (${summary.decisionsPerRoundTripShared} decisions per round trip); ceiling of one dependency on one Redis core: ~${summary.ceilingUnsharedPerCore} decisions/s unshared, ~${summary.ceilingSharedPerCore} decisions/s shared at this batching\n`,
  );
}

/** The command line; a bad value names the option, exit 2. */
function args() {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string' },
      rounds: { type: 'string' },
      processes: { type: 'string', default: '8' },
      callers: { type: 'string', default: '64' },
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const seconds = Number(values.seconds ?? (values.quick ? 2 : 5));
  const rounds = Number(values.rounds ?? (values.quick ? 1 : 3));
  const processes = Number(values.processes);
  const callers = Number(values.callers);
  const whole = (n: number, max: number) => Number.isInteger(n) && n >= 1 && n <= max;
  if (!whole(seconds, 600) || !whole(rounds, 100) || !whole(processes, 64) || !whole(callers, 10_000)) {
    process.stderr.write(
      '--seconds (1 to 600), --rounds (1 to 100), --processes (1 to 64) and --callers (1 to 10000) must be whole numbers\n',
    );
    process.exit(2);
  }
  return { seconds, rounds, processes, callers, json: values.json === true };
}
