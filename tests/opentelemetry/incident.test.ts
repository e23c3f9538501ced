/**
 * One incident, traced and measured: a job whose search call times out twice is dead-lettered (max
 * attempts), then replayed, and the replay completes. Real redis-server, real BullMQ 6 with bullmq-otel's
 * telemetry, the OpenTelemetry SDK's in-memory exporter; the OpenTelemetry metrics of the run must match
 * the Prometheus exporter's for the same run.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AggregationTemporality,
  DataPointType,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { Queue } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import { type MetricObjectWithValues, type MetricValue, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { MemoryBudgetStore } from '../../src/budget/memory-store.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { deadLetterQueue } from '../../src/bullmq/dead-letter-queue.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { METRICS, prometheusNameOf } from '../../src/metrics/catalog.js';
import { openTelemetryMetrics, openTelemetryTracing } from '../../src/opentelemetry/index.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { createMetrics } from '../../src/prometheus/index.js';
import { RedisDeadLetterStore } from '../../src/redis/dead-letter-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

const QUEUE = 'otel-index';

/** Collects on demand: the test reads the meter exactly when it reads the Prometheus registry. */
class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

let server: TestRedis;
const spans = new InMemorySpanExporter();
const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] });
const reader = new OnDemandReader();
const meterProvider = new MeterProvider({ readers: [reader] });

beforeAll(async () => {
  server = await TestRedis.start({ args: ['--hz', '100'] });
  trace.setGlobalTracerProvider(tracerProvider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(async () => {
  trace.disable();
  context.disable();
  propagation.disable();
  metrics.disable();
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
  await server?.close();
});

interface Run {
  spans: ReadableSpan[];
  prometheus: MetricObjectWithValues<MetricValue<string>>[];
  otel: ResourceMetrics;
  recordId: string;
}

/** The incident: search fails until `healthy` is set, then the dead letter is replayed. */
async function incident(): Promise<Run> {
  const connection = { ...server.connection, maxRetriesPerRequest: null };
  const { Redis } = await import('ioredis');
  const redis = new Redis(connection);
  const store = new RedisDeadLetterStore({ redis, prefix: 'otel' });
  const budget = new RetryBudget({ store: new MemoryBudgetStore(), minAllowance: 5, windowMs: 60_000 });
  const breaker = new CircuitBreaker({ consecutiveFailures: 10 });
  const health = { healthy: false };
  const queue = new Queue(QUEUE, { connection, telemetry: new BullMQOtel({ tracerName: 'producer' }) });
  const worker = createWorker<{ docId: number }>(
    QUEUE,
    async (job, ctx) =>
      ctx.call('search', () => {
        if (!health.healthy) throw Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' });
        return `indexed ${job.data.docId}`;
      }),
    {
      connection,
      policy: definePolicy({
        name: 'incident',
        maxAttempts: 2,
        backoff: { type: 'fixed', delayMs: 30 },
        jitter: 'none',
      }),
      deadLetters: store,
      dependencies: { reindex: 'search' },
      budget,
      breaker,
      instrumentation: openTelemetryTracing(),
      workerOptions: { telemetry: new BullMQOtel({ tracerName: 'worker' }) },
    },
  );
  const prometheus = new Registry();
  const promMetrics = createMetrics({ registry: prometheus });
  const otelMetrics = openTelemetryMetrics({ meterProvider });
  const dlq = deadLetterQueue(QUEUE, { store, queue });
  for (const m of [promMetrics, otelMetrics]) {
    m.observeWorker(worker);
    m.observeBudget(budget);
    m.observeBreaker(breaker);
    m.observeDeadLetters(dlq);
  }
  let completed = 0;
  worker.on('completed', () => completed++);
  try {
    await queue.add('reindex', { docId: 42 }, { jobId: 'doc-42' });
    await waitFor(async () => (await store.count(QUEUE)) === 1, 10_000, 'the dead letter');
    const [record] = (await store.list(QUEUE, { limit: 1 })).records;
    health.healthy = true;
    await dlq.replay();
    await waitFor(() => completed === 1, 10_000, 'the replayed job');
    await worker.close();
    await budget.flush();
    const otel = (await reader.collect()).resourceMetrics;
    const promJson = await prometheus.getMetricsAsJSON();
    await tracerProvider.forceFlush();
    return {
      spans: spans.getFinishedSpans(),
      prometheus: promJson,
      otel,
      recordId: record?.id ?? '',
    };
  } finally {
    promMetrics.dispose();
    otelMetrics.dispose();
    await worker.close();
    await dlq.close();
    await queue.close();
    redis.disconnect();
  }
}

let run: Run;
const byName = (name: string) => run.spans.filter((s) => s.name === name);
const parentOf = (span: ReadableSpan) =>
  run.spans.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId);

describe('an incident as a trace', () => {
  beforeAll(async () => {
    run = await incident();
  }, 30_000);

  it('gives each attempt a stormguard.attempt span under BullMQ process span, with its decision', () => {
    const attempts = byName('stormguard.attempt').sort(
      (a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
    );
    expect(attempts).toHaveLength(3);
    for (const attempt of attempts) expect(parentOf(attempt)?.name).toBe(`process ${QUEUE}`);
    const [first, second, replayed] = attempts as [ReadableSpan, ReadableSpan, ReadableSpan];
    expect(first.attributes).toMatchObject({
      'messaging.system': 'bullmq',
      'messaging.destination.name': QUEUE,
      'messaging.message.id': 'doc-42',
      'stormguard.task': 'reindex',
      'stormguard.dependency': 'search',
      'stormguard.attempt': 1,
      'stormguard.decision': 'retry',
      'stormguard.retry.delay_ms': 30,
      'stormguard.retry.cause': 'backoff',
      'stormguard.retry.number': 1,
      'stormguard.classification.reason': 'ETIMEDOUT',
      'stormguard.classification.family': 'network',
      'stormguard.classification.retryable': true,
      'stormguard.breaker.state': 'closed',
      'stormguard.budget.granted': true,
      'stormguard.budget.allowance': 5,
      'stormguard.budget.spent': 1,
      'stormguard.budget.denied': 0,
      'stormguard.budget.degraded': false,
      'error.type': 'Error',
    });
    expect(second.attributes).toMatchObject({
      'stormguard.attempt': 2,
      'stormguard.decision': 'dead-letter',
      'stormguard.dead_letter.reason': 'max-attempts',
      'stormguard.dead_letter.record_id': run.recordId,
      'stormguard.classification.reason': 'ETIMEDOUT',
      'error.type': 'Error',
    });
    expect(replayed.attributes).toMatchObject({
      'stormguard.attempt': 1,
      'stormguard.replays': 1,
      'stormguard.replayed_from': run.recordId,
      'stormguard.decision': 'completed',
    });
    expect(replayed.attributes['error.type']).toBeUndefined();
  });

  it('links the second attempt to the first, and the replay to both', () => {
    const attempts = byName('stormguard.attempt').sort(
      (a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
    );
    const [first, second, replayed] = attempts as [ReadableSpan, ReadableSpan, ReadableSpan];
    const ref = (s: ReadableSpan) => ({ traceId: s.spanContext().traceId, spanId: s.spanContext().spanId });
    const links = (s: ReadableSpan) =>
      s.links.map((l) => ({
        traceId: l.context.traceId,
        spanId: l.context.spanId,
        kind: l.attributes?.['stormguard.link'],
      }));
    expect(first.links).toEqual([]);
    expect(links(second)).toEqual([{ ...ref(first), kind: 'earlier-attempt' }]);
    expect(links(replayed)).toEqual([
      { ...ref(first), kind: 'replayed-from' },
      { ...ref(second), kind: 'replayed-from' },
    ]);
    // Both original attempts belong to the job's trace: BullMQ carries it from the producer's add span.
    expect(second.spanContext().traceId).toBe(first.spanContext().traceId);
  });

  it('gives every ctx.call a span named after its dependency, under its attempt', () => {
    const calls = byName('search');
    expect(calls).toHaveLength(3);
    for (const call of calls) {
      expect(parentOf(call)?.name).toBe('stormguard.attempt');
      expect(call.attributes['stormguard.dependency']).toBe('search');
    }
    expect(calls.filter((c) => c.attributes['error.type'] === 'Error')).toHaveLength(2);
  });

  it('records the same counts through the OpenTelemetry meter as through the Prometheus exporter', async () => {
    const prom = new Map(run.prometheus.map((m) => [m.name, m]));
    const otel = new Map(
      run.otel.scopeMetrics.flatMap((s) => s.metrics).map((m) => [m.descriptor.name, m] as const),
    );
    const series = (labels: object) => JSON.stringify(Object.entries(labels).sort());
    for (const def of Object.values(METRICS)) {
      expect(prometheusNameOf(def)).toBe(`stormguard_${def.name}`);
      const promMetric = prom.get(`stormguard_${def.name}`);
      const promValues = new Map<string, number>();
      for (const v of promMetric?.values ?? []) {
        const sample = v as { labels: object; value: number; metricName?: string };
        if (def.type === 'histogram' && sample.metricName !== `stormguard_${def.name}_count`) continue;
        if (def.type !== 'gauge' && sample.value === 0) continue;
        promValues.set(series(sample.labels), sample.value);
      }
      const otelValues = new Map<string, number>();
      for (const point of otel.get(def.otel.name)?.dataPoints ?? []) {
        const value =
          otel.get(def.otel.name)?.dataPointType === DataPointType.HISTOGRAM
            ? (point.value as { count: number }).count
            : (point.value as number);
        otelValues.set(series(point.attributes), value);
      }
      expect(otelValues, def.otel.name).toEqual(promValues);
    }
    const job = { dependency: 'search', queue: QUEUE, task: 'reindex' };
    const promCount = (name: string, labels: object) =>
      (
        prom.get(name)?.values.find((v) => series(v.labels) === series(labels)) as
          | { value: number }
          | undefined
      )?.value;
    expect(promCount('stormguard_attempts_total', job)).toBe(3);
    expect(promCount('stormguard_retries_total', job)).toBe(1);
    expect(promCount('stormguard_successes_total', job)).toBe(1);
    expect(promCount('stormguard_jobs_completed_total', job)).toBe(1);
    expect(promCount('stormguard_dead_letters_total', { ...job, reason: 'max-attempts' })).toBe(1);
    expect(
      promCount('stormguard_replays_total', { queue: QUEUE, task: 'reindex', reason: 'max-attempts' }),
    ).toBe(1);
    expect(promCount('stormguard_budget_grants_total', { dependency: 'search' })).toBe(1);
    // Read from the stores at collection time, by both.
    expect(promCount('stormguard_budget_allowance', { dependency: 'search' })).toBe(5);
    expect(promCount('stormguard_budget_spent', { dependency: 'search' })).toBe(1);
    expect(promCount('stormguard_breaker_state', { dependency: 'search', state: 'closed' })).toBe(1);
    expect(promCount('stormguard_dead_letter_queue_depth', { queue: QUEUE })).toBe(0);
  });
});
