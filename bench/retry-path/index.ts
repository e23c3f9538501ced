/**
 * What a retried job costs in Redis commands: every job fails once (a transient error) and succeeds on its
 * retry, through a bare BullMQ worker (`attempts: 2`, a fixed 10 ms backoff) and through stormguard's
 * createWorker (a policy with the same fixed 10 ms delay), side by side in the same run on a redis-server
 * this script starts on a free port, in alternating order round by round.
 *
 * stormguard runs in two set-ups:
 * - `budget`: a `RetryBudget` on `RedisBudgetStore` and a `RedisDeadLetterStore` (attempt state), no limits,
 *   no breaker: the set-up `bench/fleet` measures;
 * - `full`: the same plus a `CircuitBreaker` on `RedisBreakerStore`, flow control on `RedisFlowStore` and
 *   OpenTelemetry tracing with an SDK tracer provider (trace links ride with the attempt state).
 *
 * Commands come from Redis: `INFO commandstats` deltas (commands inside Lua scripts included) for the totals,
 * and a MONITOR connection for the breakdown: each command a client sent, with those its script ran, is
 * named by its component (a script by the name its client registered it under; BullMQ's by BullMQ's name).
 * Counting starts after the jobs are added and ends when the worker has closed (the budget's last success
 * flush included). Prints commands per retried job for each, stormguard's extra over bare BullMQ (goal:
 * at most +3), and the extra by component and command.
 *
 *   npx tsx bench/retry-path/index.ts [--jobs 1000] [--rounds 3] [--concurrency 10] [--setups budget,full] [--json]
 */
import { parseArgs } from 'node:util';
import { BatchSpanProcessor, type SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { openTelemetryTracing } from '../../src/opentelemetry/index.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { TestRedis, waitFor } from '../../tests/helpers/redis-server.js';
import { formatTable, median } from '../common.js';
import { type Breakdown, CommandMonitor } from './monitor.js';

type Setup = 'budget' | 'full';
type Side = 'bare' | Setup;
const DELAY_MS = 10;
const GOAL_EXTRA = 3;

const options = args();
const server = await TestRedis.start();
const admin = new Redis(server.connection);
const stores = new Redis({ ...server.connection, maxRetriesPerRequest: null });
const monitor = new CommandMonitor();
await monitor.start(admin);

/** A transient failure, as a dependency that timed out throws. */
function transient(): Error {
  return Object.assign(new Error('downstream timed out'), { code: 'ETIMEDOUT' });
}

/** Spans are made and dropped: what is measured is what tracing writes to Redis, not their export. */
const dropSpans: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => {},
};

const policy = definePolicy({
  name: 'retry-path',
  maxAttempts: 3,
  backoff: { type: 'fixed', delayMs: DELAY_MS },
  jitter: 'none',
  retryUnknown: true,
});

interface Measurement {
  commandsPerJob: number;
  /** Commands by name (INFO commandstats), per job. */
  commands: Record<string, number>;
  /** Commands by component and name (MONITOR), per job. */
  breakdown: Breakdown;
}

async function commandStats(): Promise<Record<string, number>> {
  const stats: Record<string, number> = {};
  for (const [, name = '', calls] of (await admin.info('commandstats')).matchAll(
    /cmdstat_([^:]+):calls=(\d+)/g,
  )) {
    if (['info', 'monitor', 'echo'].includes(name)) continue;
    stats[name] = Number(calls);
  }
  return stats;
}

let runs = 0;

/** One run of `jobs` jobs that each fail once, on one side. */
async function measure(side: Side, jobs: number): Promise<Measurement> {
  const name = `retry-${side}-${runs++}`;
  const queue = new Queue(name, { connection: stores });
  const failedOnce = new Set<string>();
  const work = async (id: string | undefined) => {
    if (!failedOnce.has(id ?? '')) {
      failedOnce.add(id ?? '');
      throw transient();
    }
    return 'ok';
  };
  const connection = new Redis({ ...server.connection, maxRetriesPerRequest: null });
  const closers: (() => Promise<unknown>)[] = [];
  let worker: Worker;
  if (side === 'bare') {
    worker = new Worker(name, async (job) => work(job.id), {
      connection,
      concurrency: options.concurrency,
      autorun: false,
    });
  } else {
    // Every retry is granted (the floor covers them all): what is measured is the cost of a grant.
    const budget = new RetryBudget({
      store: new RedisBudgetStore({ redis: stores, prefix: 'bench' }),
      minAllowance: 1_000_000,
      log: false,
    });
    closers.push(() => budget.close());
    const full = side === 'full';
    const breaker = full
      ? new CircuitBreaker({
          store: new RedisBreakerStore({ redis: stores, prefix: 'bench' }),
          // Every job's first call fails: a breaker that never opens on them, so every job retries.
          minimumVolume: 1_000_000_000,
          consecutiveFailures: 1_000_000_000,
        })
      : undefined;
    const tracerProvider = full
      ? new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter: dropSpans })] })
      : undefined;
    if (tracerProvider) closers.push(() => tracerProvider.shutdown());
    worker = createWorker(name, async (job, ctx) => ctx.call('downstream', () => work(job.id)), {
      connection,
      policy,
      budget,
      deadLetters: new RedisDeadLetterStore({ redis: stores, prefix: 'bench' }),
      concurrency: options.concurrency,
      workerOptions: { autorun: false },
      onWarning: () => undefined,
      ...(full
        ? {
            breaker,
            flowControl: { store: new RedisFlowStore({ redis: stores, prefix: 'bench' }) },
            instrumentation: openTelemetryTracing({ tracerProvider }),
          }
        : {}),
    });
  }
  let completed = 0;
  worker.on('completed', () => {
    completed++;
  });
  // A bare BullMQ job's first attempt fails on purpose; a stormguard job fails only when it ends badly.
  if (side !== 'bare')
    worker.on('failed', (_job, error) => process.stderr.write(`${side} job failed: ${String(error)}\n`));
  worker.on('error', (error) => process.stderr.write(`${side} worker: ${String(error)}\n`));
  await worker.waitUntilReady();
  for (let i = 0; i < jobs; i += 1_000)
    await queue.addBulk(
      Array.from({ length: Math.min(1_000, jobs - i) }, (_, j) => ({
        name: 'job',
        data: { i: i + j },
        opts:
          side === 'bare'
            ? { attempts: 2, backoff: { type: 'fixed', delay: DELAY_MS }, removeOnComplete: true }
            : { removeOnComplete: true },
      })),
    );
  await monitor.settle(admin);
  const before = await commandStats();
  monitor.record();
  void worker.run();
  await waitFor(() => completed >= jobs, 600_000, `${jobs} ${side} jobs`, 5);
  await worker.close();
  for (const close of closers) await close();
  await monitor.settle(admin);
  const after = await commandStats();
  const breakdown = monitor.stop([connection, stores]);
  connection.disconnect();
  if (failedOnce.size !== jobs) throw new Error(`${side}: ${failedOnce.size} of ${jobs} jobs failed once`);
  await queue.obliterate({ force: true });
  await queue.close();
  const commands: Record<string, number> = {};
  let total = 0;
  for (const [command, calls] of Object.entries(after)) {
    const delta = calls - (before[command] ?? 0);
    if (delta <= 0) continue;
    commands[command] = delta / jobs;
    total += delta;
  }
  return { commandsPerJob: total / jobs, commands, breakdown: perJob(breakdown, jobs) };
}

function perJob(breakdown: Breakdown, jobs: number): Breakdown {
  return Object.fromEntries(
    Object.entries(breakdown).map(([component, counts]) => [
      component,
      Object.fromEntries(Object.entries(counts).map(([command, n]) => [command, n / jobs])),
    ]),
  );
}

/** One line of the breakdown: a component's command, per job, bare and stormguard, and the difference. */
interface BreakdownRow {
  component: string;
  command: string;
  bare: number;
  stormguard: number;
  extra: number;
}

interface SetupResult {
  setup: Setup;
  bareCommandsPerJob: number;
  stormguardCommandsPerJob: number;
  /** Median over the rounds of each round's difference. */
  extraCommandsPerJob: number;
  goal: number;
  met: boolean;
  /** Per component and command, medians over the rounds (differences of at least 0.005 per job). */
  breakdown: BreakdownRow[];
}

const sides: Side[] = ['bare', ...options.setups];
const results: Record<Side, Measurement[]> = { bare: [], budget: [], full: [] };
// Warm-up, discarded: script loading, connection set-up, JIT.
for (const side of sides) await measure(side, Math.min(200, options.jobs));
for (let round = 0; round < options.rounds; round++) {
  const order = round % 2 === 0 ? sides : [...sides].reverse();
  for (const side of order) {
    process.stderr.write(`round ${round + 1}: ${side}\n`);
    results[side].push(await measure(side, options.jobs));
  }
}
const load = (await import('node:os')).loadavg();
await monitor.close();
admin.disconnect();
stores.disconnect();
await server.close();

const setups: SetupResult[] = options.setups.map((setup) => {
  const ours = results[setup];
  const bare = results.bare;
  const extra = median(ours.map((m, i) => m.commandsPerJob - (bare[i] as Measurement).commandsPerJob));
  const keys = new Set<string>();
  for (const m of [...ours, ...bare])
    for (const [component, counts] of Object.entries(m.breakdown))
      for (const command of Object.keys(counts)) keys.add(`${component}\u0000${command}`);
  const breakdown: BreakdownRow[] = [];
  for (const key of [...keys].sort()) {
    const [component = '', command = ''] = key.split('\u0000');
    const pick = (m: Measurement) => m.breakdown[component]?.[command] ?? 0;
    const b = median(bare.map(pick));
    const s = median(ours.map(pick));
    if (Math.abs(s - b) < 0.005) continue;
    breakdown.push({ component, command, bare: round3(b), stormguard: round3(s), extra: round3(s - b) });
  }
  return {
    setup,
    bareCommandsPerJob: round3(median(bare.map((m) => m.commandsPerJob))),
    stormguardCommandsPerJob: round3(median(ours.map((m) => m.commandsPerJob))),
    extraCommandsPerJob: round3(extra),
    goal: GOAL_EXTRA,
    met: extra <= GOAL_EXTRA,
    breakdown,
  };
});

const header = {
  jobs: options.jobs,
  rounds: options.rounds,
  concurrency: options.concurrency,
  delayMs: DELAY_MS,
  loadAverage: load.map((n) => Number(n.toFixed(2))),
};
if (options.json) {
  process.stdout.write(`${JSON.stringify({ ...header, setups }, null, 2)}\n`);
} else {
  process.stdout.write(
    `${options.jobs} jobs per run, each failing once then succeeding, concurrency ${options.concurrency}, median of ${options.rounds} alternated round(s); load average ${header.loadAverage.join(' ')}\n\n`,
  );
  const summary = [
    ['set-up', 'bare BullMQ cmds/job', 'stormguard cmds/job', 'extra per retried job', 'goal'],
    ...setups.map((s) => [
      s.setup,
      s.bareCommandsPerJob.toFixed(2),
      s.stormguardCommandsPerJob.toFixed(2),
      signed(s.extraCommandsPerJob),
      `<= +${GOAL_EXTRA} ${s.met ? 'met' : 'MISSED'}`,
    ]),
  ];
  process.stdout.write(`${formatTable(summary)}\n`);
  for (const s of setups) {
    const components = new Map<string, { bare: number; stormguard: number }>();
    for (const r of s.breakdown) {
      const sum = components.get(r.component) ?? { bare: 0, stormguard: 0 };
      sum.bare += r.bare;
      sum.stormguard += r.stormguard;
      components.set(r.component, sum);
    }
    process.stdout.write(`\n${s.setup}: the difference by component (commands per job)\n`);
    const byComponent = [
      ['component', 'bare', 'stormguard', 'extra'],
      ...[...components].map(([component, sum]) => [
        component,
        sum.bare.toFixed(2),
        sum.stormguard.toFixed(2),
        signed(sum.stormguard - sum.bare),
      ]),
    ];
    process.stdout.write(`${formatTable(byComponent)}\n`);
    process.stdout.write(`\n${s.setup}: the same by command\n`);
    const rows = [
      ['component', 'command', 'bare', 'stormguard', 'extra'],
      ...s.breakdown.map((r) => [
        r.component,
        r.command,
        r.bare.toFixed(2),
        r.stormguard.toFixed(2),
        signed(r.extra),
      ]),
    ];
    process.stdout.write(`${formatTable(rows, 2)}\n`);
  }
}

function signed(n: number): string {
  return `${n >= 0 ? '+' : ''}${n.toFixed(2)}`;
}

function round3(n: number): number {
  return Number(n.toFixed(3));
}

/** The command line; a bad value names the option, exit 2. */
function args() {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: '1000' },
      rounds: { type: 'string', default: '3' },
      concurrency: { type: 'string', default: '10' },
      setups: { type: 'string', default: 'budget,full' },
      json: { type: 'boolean', default: false },
    },
  });
  const jobs = Number(values.jobs);
  const rounds = Number(values.rounds);
  const concurrency = Number(values.concurrency);
  const setups = values.setups.split(',') as Setup[];
  const whole = (n: number) => Number.isInteger(n) && n >= 1;
  if (
    !whole(jobs) ||
    !whole(rounds) ||
    !whole(concurrency) ||
    setups.length === 0 ||
    !setups.every((s) => s === 'budget' || s === 'full')
  ) {
    process.stderr.write(
      '--jobs, --rounds and --concurrency must be whole numbers >= 1, --setups a comma-separated list of budget and full\n',
    );
    process.exit(2);
  }
  return { jobs, rounds, concurrency, setups, json: values.json === true };
}
