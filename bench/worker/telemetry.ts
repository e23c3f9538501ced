/**
 * What OpenTelemetry tracing costs a worker: no-op jobs making one `ctx.call` each, through `createWorker`
 * three ways in the same run, on a redis-server this script starts on a free port:
 *
 * - `untraced`: no `instrumentation` (the baseline);
 * - `off`: `instrumentation: openTelemetryTracing()` with no tracer provider registered (the cost when an
 *   application ships the instrumentation but runs without an SDK: goal, the baseline's jobs/s);
 * - `on`: the same with an SDK tracer provider, a batch span processor and an exporter that drops the spans
 *   (the cost of making two spans per job: the attempt's and the call's).
 *
 * Prints jobs/s, the ratio to `untraced`, and this process's CPU time per job, median of interleaved rounds.
 * Then the same three ways without Redis or BullMQ: the job runtime alone running `--jobs × 20` jobs in
 * process, whose time per job is the tracing's own cost, far steadier than throughput on a loaded machine.
 *
 *   npx tsx bench/worker/telemetry.ts [--jobs 5000] [--rounds 3] [--json]
 */
import { ExportResultCode } from '@opentelemetry/core';
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { Queue } from 'bullmq';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { systemClock } from '../../src/common/clock.js';
import { EventBus } from '../../src/common/events.js';
import { systemRandom } from '../../src/common/random.js';
import { openTelemetryTracing } from '../../src/opentelemetry/index.js';
import { presets } from '../../src/policy/presets.js';
import type { JobEvents } from '../../src/runtime/events.js';
import type { JobHandle } from '../../src/runtime/job-handle.js';
import { JobRuntime } from '../../src/runtime/job-runtime.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { waitFor } from '../../tests/helpers/redis-server.js';
import { benchArgs, formatTable, median } from '../common.js';
import { type BenchBackend, redisBackend } from './backends.js';

const CONCURRENCIES = [1, 10, 50];
const KINDS = ['untraced', 'off', 'on'] as const;
type Kind = (typeof KINDS)[number];

const { size: jobs, rounds, json } = benchArgs({ size: ['jobs', 5000] });

/** Takes every span and keeps none: what is measured is making them, not shipping them. */
class DiscardingExporter implements SpanExporter {
  exported = 0;
  export(spans: ReadableSpan[], done: (result: { code: ExportResultCode }) => void): void {
    this.exported += spans.length;
    done({ code: ExportResultCode.SUCCESS });
  }
  async shutdown(): Promise<void> {}
}

interface Measurement {
  jobsPerSecond: number;
  cpuMicrosPerJob: number;
  spansPerJob: number;
}

let run = 0;

async function measure(backend: BenchBackend, kind: Kind, concurrency: number): Promise<Measurement> {
  const name = `bench-otel-${kind}-${concurrency}-${run++}`;
  const connection = backend.connection as never;
  const queue = new Queue(name, { connection });
  await queue.addBulk(
    Array.from({ length: jobs }, (_, i) => ({ name: 'noop', data: { i }, opts: { removeOnComplete: true } })),
  );
  const exporter = new DiscardingExporter();
  const tracerProvider =
    kind === 'on'
      ? new TracerProvider({
          spanProcessors: [new BatchSpanProcessor({ exporter, maxQueueSize: 100_000 })],
        })
      : undefined;
  const budget = new RetryBudget({ store: backend.budgetStore(`bench-otel${run}`) });
  const worker = createWorker(name, async (_job, ctx) => ctx.call('search', async () => 'ok'), {
    connection,
    policy: presets.idempotentInternal,
    deadLetters: new MemoryDeadLetterStore(),
    budget,
    concurrency,
    workerOptions: { autorun: false },
    ...(kind === 'untraced'
      ? {}
      : { instrumentation: openTelemetryTracing(tracerProvider ? { tracerProvider } : {}) }),
  });
  let completed = 0;
  worker.on('completed', () => {
    completed++;
  });
  await worker.waitUntilReady();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  void worker.run();
  await waitFor(() => completed >= jobs, 600_000, `${jobs} ${kind} jobs`, 5);
  // Spans still queued in the batch processor are part of the cost: exported before the clock stops.
  await tracerProvider?.forceFlush();
  const seconds = (performance.now() - started) / 1_000;
  const cpu = process.cpuUsage(cpuBefore);
  await worker.close();
  await budget.close();
  await tracerProvider?.shutdown();
  await queue.obliterate({ force: true });
  await queue.close();
  return {
    jobsPerSecond: jobs / seconds,
    cpuMicrosPerJob: (cpu.user + cpu.system) / jobs,
    spansPerJob: exporter.exported / jobs,
  };
}

interface Row {
  concurrency: number;
  jobsPerSecond: Record<Kind, number>;
  ratio: Record<Kind, number>;
  cpuMicrosPerJob: Record<Kind, number>;
  spansPerJob: Record<Kind, number>;
}

async function benchmark(backend: BenchBackend): Promise<Row[]> {
  const rows: Row[] = [];
  // Warm-up, discarded: the first runs pay for JIT compilation.
  for (const kind of KINDS) await measure(backend, kind, 10);
  for (const concurrency of CONCURRENCIES) {
    const results: Record<Kind, Measurement[]> = { untraced: [], off: [], on: [] };
    // Interleaved, rotating the order each round, so drift hits every kind alike.
    for (let round = 0; round < rounds; round++) {
      const order = KINDS.map((_, i) => KINDS[(i + round) % KINDS.length] as Kind);
      for (const kind of order) results[kind].push(await measure(backend, kind, concurrency));
    }
    const per = (pick: (m: Measurement, i: number, kind: Kind) => number) =>
      Object.fromEntries(
        KINDS.map((kind) => [kind, median(results[kind].map((m, i) => pick(m, i, kind)))]),
      ) as Record<Kind, number>;
    rows.push({
      concurrency,
      jobsPerSecond: per((m) => Math.round(m.jobsPerSecond)),
      // Each round's runs were back to back: the median of per-round ratios is steadier than a ratio of medians.
      ratio: per((m, i) => m.jobsPerSecond / (results.untraced[i] as Measurement).jobsPerSecond),
      cpuMicrosPerJob: per((m) => m.cpuMicrosPerJob),
      spansPerJob: per((m) => m.spansPerJob),
    });
  }
  return rows;
}

/** Microseconds per job of the job runtime alone: `count` successful jobs, one `ctx.call` each. */
async function inProcess(kind: Kind, count: number): Promise<number> {
  const exporter = new DiscardingExporter();
  const tracerProvider =
    kind === 'on'
      ? new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter, maxQueueSize: 100_000 })] })
      : undefined;
  const store = new MemoryDeadLetterStore();
  const runtime = new JobRuntime({
    queue: 'bench',
    policy: presets.idempotentInternal,
    dependencies: {},
    attempts: store,
    deadLetters: store,
    clock: systemClock,
    random: systemRandom,
    events: new EventBus<JobEvents>(),
    internalError: () => {},
    maxStalls: 1,
    ...(kind === 'untraced'
      ? {}
      : { instrumentation: openTelemetryTracing(tracerProvider ? { tracerProvider } : {}) }),
  });
  const job: JobHandle = {
    ref: { queue: 'bench', jobId: '1', createdAt: 0 },
    name: 'noop',
    data: {},
    opts: {},
    starts: 1,
    finishes: 0,
    stalls: 0,
    moveToDelayed: async () => {},
  };
  const started = performance.now();
  for (let i = 0; i < count; i++) await runtime.run(job, (ctx) => ctx.call('search', () => 'ok'));
  await tracerProvider?.forceFlush();
  const micros = ((performance.now() - started) * 1_000) / count;
  await tracerProvider?.shutdown();
  return micros;
}

async function inProcessRows(): Promise<Record<Kind, number>> {
  const count = jobs * 20;
  for (const kind of KINDS) await inProcess(kind, count);
  const results: Record<Kind, number[]> = { untraced: [], off: [], on: [] };
  for (let round = 0; round < rounds; round++)
    for (const kind of KINDS.map((_, i) => KINDS[(i + round) % KINDS.length] as Kind))
      results[kind].push(await inProcess(kind, count));
  return Object.fromEntries(KINDS.map((kind) => [kind, median(results[kind])])) as Record<Kind, number>;
}

const backend = await redisBackend();
let rows: Row[];
try {
  rows = await benchmark(backend);
} finally {
  await backend.close();
}
const runtimeOnly = await inProcessRows();

if (json) {
  process.stdout.write(
    `${JSON.stringify({ jobs, rounds, server: backend.server, rows, runtimeMicrosPerJob: runtimeOnly }, null, 2)}\n`,
  );
} else {
  process.stdout.write(
    `no-op jobs with one ctx.call: ${jobs} per run, median of ${rounds} interleaved rounds (ratio: median of the rounds' ratios to untraced); ${backend.server}\n\n`,
  );
  const header = [
    'concurrency',
    ...KINDS.map((k) => `${k} jobs/s`),
    'off ratio',
    'on ratio',
    ...KINDS.map((k) => `${k} CPU µs/job`),
    'on spans/job',
  ];
  const table = rows.map((r) => [
    String(r.concurrency),
    ...KINDS.map((k) => String(r.jobsPerSecond[k])),
    `${r.ratio.off.toFixed(2)}×`,
    `${r.ratio.on.toFixed(2)}×`,
    ...KINDS.map((k) => String(Math.round(r.cpuMicrosPerJob[k]))),
    r.spansPerJob.on.toFixed(2),
  ]);
  process.stdout.write(`${formatTable([header, ...table], 1)}\n`);
  process.stdout.write(
    `\njob runtime alone, in process (${jobs * 20} jobs per run, median of ${rounds} rounds): µs per job\n\n`,
  );
  process.stdout.write(
    `${formatTable([KINDS.map((k) => k), KINDS.map((k) => runtimeOnly[k].toFixed(2))], 0)}\n`,
  );
}
