/**
 * Fleet-wide limits on /metrics: the gauges read from the limits store at each scrape (calls in flight,
 * the effective maxInFlight and maxRatePerSecond, a Retry-After hold and how long it has left, an
 * operator's pause), and the counters of the waits and holds a worker's events tell about; through
 * prom-client and through an OpenTelemetry meter.
 */
import {
  AggregationTemporality,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/program.js';
import { FakeClock } from '../../src/common/clock.js';
import { EventBus } from '../../src/common/events.js';
import { openTelemetryMetrics } from '../../src/opentelemetry/index.js';
import { createMetrics } from '../../src/prometheus/index.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { MemoryFlowStore } from '../../src/runtime/flow-control/memory-store.js';
import type { LimitExchange } from '../../src/runtime/limits/store.js';
import type { WorkerEvents } from '../../src/runtime/worker-events.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';
import { parseExposition, sampleValue } from './exposition.js';

const T0 = 1_700_000_000_000;

/** One process's exchange: its code's limits, and `take` leases of cost 1. */
function exchange(declared: LimitExchange['declared'], take: number): LimitExchange {
  return {
    holder: 'host-a:1',
    declared,
    leaseMs: 30_000,
    give: [],
    renew: [],
    take: Array.from({ length: take }, (_, i) => ({ lease: `l${i}`, cost: 1 })),
    probes: 1,
    ramp: { slowStartMs: 30_000, floorPerSecond: 1 },
  };
}

/** Every limit gauge of `dependency` in one scrape. */
async function limitGauges(registry: Registry, dependency: string) {
  const s = parseExposition(await registry.metrics());
  const value = (name: string) => sampleValue(s, `stormguard_${name}`, { dependency });
  return {
    inFlight: value('limit_in_flight'),
    maxInFlight: value('limit_max_in_flight'),
    maxRate: value('limit_max_rate_per_second'),
    held: value('limit_held'),
    holdRemaining: value('limit_hold_remaining_seconds'),
    paused: value('limit_paused'),
  };
}

describe('limit gauges on a memory flow store', () => {
  it('show calls in flight against the cap, a Retry-After hold counting down, and a pause', async () => {
    const clock = new FakeClock(T0);
    const store = new MemoryFlowStore({ clock });
    const registry = new Registry();
    const metrics = createMetrics({ registry });
    try {
      metrics.observeLimits(store);
      expect(parseExposition(await registry.metrics()).filter((s) => s.name.includes('limit_'))).toEqual([]);

      await store.exchangeLimits('openai', exchange({ maxInFlight: 3 }, 3));
      await store.exchangeLimits('crm', exchange({ maxRatePerSecond: 5 }, 0));
      expect(await limitGauges(registry, 'openai')).toEqual({
        inFlight: 3,
        maxInFlight: 3,
        maxRate: undefined,
        held: 0,
        holdRemaining: 0,
        paused: 0,
      });
      expect(await limitGauges(registry, 'crm')).toEqual({
        inFlight: 0,
        maxInFlight: undefined,
        maxRate: 5,
        held: 0,
        holdRemaining: 0,
        paused: 0,
      });

      // A 429 with Retry-After: 60, then 15 s pass; an operator pauses crm and lowers its rate.
      await store.holdLimits('openai', 60_000, 'retry-after');
      clock.advance(15_000);
      await store.overrideLimits('crm', {
        paused: true,
        maxRatePerSecond: 2,
        reason: 'incident',
        by: 'alice',
      });
      expect(await limitGauges(registry, 'openai')).toMatchObject({ held: 1, holdRemaining: 45 });
      expect(await limitGauges(registry, 'crm')).toMatchObject({ maxRate: 2, paused: 1 });

      // The hold ends: held goes back to 0 (the dependency is probing).
      clock.advance(45_000);
      await store.exchangeLimits('openai', exchange({ maxInFlight: 3 }, 0));
      expect(await limitGauges(registry, 'openai')).toMatchObject({ held: 0, holdRemaining: 0 });
    } finally {
      metrics.dispose();
    }
  });

  it('leave a scrape whose listing fails without limit gauges, and say why', async () => {
    const errors: unknown[] = [];
    const registry = new Registry();
    const metrics = createMetrics({ registry, onError: (e) => errors.push(e) });
    try {
      metrics.observeLimits({
        limitedDependencies: async () => {
          throw new Error('limits store down');
        },
        limitState: () => {
          throw new Error('not asked');
        },
      });
      expect(parseExposition(await registry.metrics()).filter((s) => s.name.includes('limit_'))).toEqual([]);
      expect(errors.map((e) => (e as Error).message)).toEqual(['limits store down']);
    } finally {
      metrics.dispose();
    }
  });

  it("count a worker's limit waits by refusal and outcome, and the holds it recorded", async () => {
    const registry = new Registry();
    const metrics = createMetrics({ registry });
    const events = new EventBus<WorkerEvents>();
    try {
      metrics.observeWorker({ events });
      const wait = { queue: 'summarise', dependency: 'openai', waitedMs: 120 };
      events.emit('limit-wait', { ...wait, by: 'in-flight', outcome: 'granted' });
      events.emit('limit-wait', { ...wait, by: 'in-flight', outcome: 'granted' });
      events.emit('limit-wait', { ...wait, by: 'hold', outcome: 'held' });
      events.emit('limit-hold', {
        queue: 'summarise',
        dependency: 'openai',
        forMs: 60_000,
        reason: 'retry-after',
        capped: false,
      });
      const s = parseExposition(await registry.metrics());
      const waits = s.filter((x) => x.name === 'stormguard_limit_waits_total');
      expect(waits.map((x) => [x.labels, x.value])).toEqual([
        [{ queue: 'summarise', dependency: 'openai', by: 'in-flight', outcome: 'granted' }, 2],
        [{ queue: 'summarise', dependency: 'openai', by: 'hold', outcome: 'held' }, 1],
      ]);
      expect(
        sampleValue(s, 'stormguard_limit_holds_total', {
          queue: 'summarise',
          dependency: 'openai',
          reason: 'retry-after',
          capped: 'false',
        }),
      ).toBe(1);
    } finally {
      metrics.dispose();
    }
  });

  it('reach an OpenTelemetry meter through the same catalogue', async () => {
    const clock = new FakeClock(T0);
    const store = new MemoryFlowStore({ clock });
    const reader = new OnDemandReader();
    const otel = openTelemetryMetrics({ meterProvider: new MeterProvider({ readers: [reader] }) });
    const events = new EventBus<WorkerEvents>();
    try {
      otel.observeLimits(store);
      otel.observeWorker({ events });
      await store.exchangeLimits('openai', exchange({ maxInFlight: 25 }, 2));
      await store.holdLimits('openai', 30_000, 'retry-after');
      events.emit('limit-wait', {
        queue: 'summarise',
        dependency: 'openai',
        by: 'rate',
        waitedMs: 40,
        outcome: 'granted',
      });
      const openai = { dependency: 'openai' };
      expect(points(await reader.collect())).toEqual({
        'stormguard.limit.in_flight': [{ attributes: openai, value: 2 }],
        'stormguard.limit.max_in_flight': [{ attributes: openai, value: 25 }],
        'stormguard.limit.held': [{ attributes: openai, value: 1 }],
        'stormguard.limit.hold_remaining': [{ attributes: openai, value: 30 }],
        'stormguard.limit.paused': [{ attributes: openai, value: 0 }],
        'stormguard.limit.waits': [
          {
            attributes: { queue: 'summarise', dependency: 'openai', by: 'rate', outcome: 'granted' },
            value: 1,
          },
        ],
      });
    } finally {
      otel.dispose();
    }
  });
});

describe('limit gauges on a Redis flow store', () => {
  let server: TestRedis;
  let redis: Redis;
  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.connection);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.close();
  });

  it('reach /metrics of stormguard metrics serve, read from its fleet', async () => {
    const prefix = 'serve';
    const flow = new RedisFlowStore({ redis, prefix });
    await flow.exchangeLimits('openai', { ...exchange({ maxInFlight: 25 }, 25), leaseMs: 600_000 });
    await flow.overrideLimits('crm', { paused: true, maxRatePerSecond: 2, reason: 'incident', by: 'alice' });

    const stop = new AbortController();
    let stdout = '';
    let stderr = '';
    const serving = run(
      [
        'metrics',
        'serve',
        '--redis',
        server.url,
        '--prefix',
        prefix,
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--json',
      ],
      {
        stdout: { write: (text: string) => (stdout += text) },
        stderr: { write: (text: string) => (stderr += text) },
        signal: stop.signal,
      },
    );
    try {
      await waitFor(() => stdout.includes('}'), 10_000, 'metrics serve to print its URL');
      const { url } = JSON.parse(stdout) as { url: string };
      const scrape = async () => parseExposition(await (await fetch(url)).text());
      let s = await scrape();
      const value = (name: string, dependency: string) =>
        sampleValue(s, `stormguard_${name}`, { dependency });
      expect([value('limit_in_flight', 'openai'), value('limit_max_in_flight', 'openai')]).toEqual([25, 25]);
      expect([value('limit_paused', 'crm'), value('limit_max_rate_per_second', 'crm')]).toEqual([1, 2]);
      await flow.holdLimits('openai', 120_000, 'retry-after');
      s = await scrape();
      expect(value('limit_held', 'openai')).toBe(1);
      expect(value('limit_hold_remaining_seconds', 'openai')).toBeGreaterThan(100);
      expect(value('limit_hold_remaining_seconds', 'openai')).toBeLessThanOrEqual(120);
    } finally {
      stop.abort();
      expect(await serving).toBe(0);
      expect(stderr).toBe('');
    }
  });
});

/** Collects on demand, so each expectation reads the meter at one known moment. */
class OnDemandReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** The data points of the limit metrics of one collection, by OpenTelemetry name. */
function points({ resourceMetrics }: { resourceMetrics: ResourceMetrics }) {
  const out: Record<string, { attributes: unknown; value: unknown }[]> = {};
  for (const metric of resourceMetrics.scopeMetrics.flatMap((s) => s.metrics))
    if (metric.descriptor.name.startsWith('stormguard.limit.') && metric.dataPoints.length > 0)
      out[metric.descriptor.name] = metric.dataPoints.map((p) => ({
        attributes: p.attributes,
        value: p.value,
      }));
  return out;
}
