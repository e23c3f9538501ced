/**
 * Flow control's fleet-wide state on /metrics: `stormguard_flow_control_enabled` follows the kill switch
 * and `stormguard_flow_dependency_down{dependency}` the down marks, read from the flow store at each
 * scrape, on the memory store and on a real redis-server (whose reads also time out when it stops); and
 * the same gauges through an OpenTelemetry meter.
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
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { MemoryBreakerStore } from '../../src/breaker/memory-store.js';
import { run } from '../../src/cli/program.js';
import { openTelemetryMetrics } from '../../src/opentelemetry/index.js';
import { createMetrics } from '../../src/prometheus/index.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { MemoryFlowStore } from '../../src/runtime/flow-control/memory-store.js';
import type { FlowStore } from '../../src/runtime/flow-control/store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';
import { parseExposition, sampleValue } from './exposition.js';

/** Scrapes `registry` and reads the two flow gauges. */
async function flowGauges(registry: Registry) {
  const s = parseExposition(await registry.metrics());
  return {
    enabled: sampleValue(s, 'stormguard_flow_control_enabled'),
    search: sampleValue(s, 'stormguard_flow_dependency_down', { dependency: 'search' }),
    mail: sampleValue(s, 'stormguard_flow_dependency_down', { dependency: 'mail' }),
  };
}

/** The kill switch set and cleared, search marked down and up; mail stays up throughout. */
async function killSwitchAndMarks(store: FlowStore, registry: Registry): Promise<void> {
  expect(await flowGauges(registry)).toEqual({ enabled: 1, search: 0, mail: 0 });

  await store.setOff(true);
  expect(await flowGauges(registry)).toEqual({ enabled: 0, search: 0, mail: 0 });
  await store.setOff(false);
  expect(await flowGauges(registry)).toEqual({ enabled: 1, search: 0, mail: 0 });

  await store.markDown('search');
  expect(await flowGauges(registry)).toEqual({ enabled: 1, search: 1, mail: 0 });
  await store.markUp('search');
  expect(await flowGauges(registry)).toEqual({ enabled: 1, search: 0, mail: 0 });
}

describe('flow gauges on a memory flow store', () => {
  it('follow the kill switch and the down marks', async () => {
    const store = new MemoryFlowStore();
    const registry = new Registry();
    const metrics = createMetrics({ registry });
    try {
      metrics.observeFlow(store, { dependencies: ['search', 'mail'] });
      await killSwitchAndMarks(store, registry);
    } finally {
      metrics.dispose();
    }
  });

  it('cover a dependency the breaker observer knows, without naming it', async () => {
    const store = new MemoryFlowStore();
    const registry = new Registry();
    const metrics = createMetrics({ registry });
    try {
      metrics.observeFlow(store);
      metrics.observeBreaker(new CircuitBreaker({ store: new MemoryBreakerStore() }), {
        dependencies: ['search'],
      });
      await store.markDown('search');
      expect(await flowGauges(registry)).toEqual({ enabled: 1, search: 1, mail: undefined });
    } finally {
      metrics.dispose();
    }
  });

  it('reach an OpenTelemetry meter through the same catalogue', async () => {
    const store = new MemoryFlowStore();
    const reader = new OnDemandReader();
    const otel = openTelemetryMetrics({ meterProvider: new MeterProvider({ readers: [reader] }) });
    try {
      otel.observeFlow(store, { dependencies: ['search'] });
      await store.setOff(true);
      await store.markDown('search');
      expect(points(await reader.collect())).toEqual({
        'stormguard.flow.control_enabled': [{ attributes: {}, value: 0 }],
        'stormguard.flow.dependency_down': [{ attributes: { dependency: 'search' }, value: 1 }],
      });
      await store.setOff(false);
      await store.markUp('search');
      expect(points(await reader.collect())).toEqual({
        'stormguard.flow.control_enabled': [{ attributes: {}, value: 1 }],
        'stormguard.flow.dependency_down': [{ attributes: { dependency: 'search' }, value: 0 }],
      });
    } finally {
      otel.dispose();
    }
  });
});

describe('flow gauges on a Redis flow store', () => {
  let server: TestRedis;
  let redis: Redis;
  beforeAll(async () => {
    server = await TestRedis.start();
    redis = new Redis(server.connection);
    redis.on('error', () => {}); // refused connections while a test has the server stopped
  });
  afterAll(async () => {
    redis.disconnect();
    await server.close();
  });

  it('follow the kill switch and the down marks the fleet shares', async () => {
    // Workers and operators write through their own connections; the exporter reads through its own.
    const writer = new RedisFlowStore({ redis, prefix: 'gauges' });
    const reading = new Redis(server.connection);
    const registry = new Registry();
    const metrics = createMetrics({ registry });
    try {
      metrics.observeFlow(new RedisFlowStore({ redis: reading, prefix: 'gauges' }), {
        dependencies: ['search', 'mail'],
      });
      await killSwitchAndMarks(writer, registry);
    } finally {
      metrics.dispose();
      reading.disconnect();
    }
  });

  it('reach /metrics of stormguard metrics serve, read from its fleet', async () => {
    const prefix = 'serve';
    const breaker = new CircuitBreaker({
      store: new RedisBreakerStore({ redis, prefix }),
      consecutiveFailures: 1,
      coolDownMs: 600_000,
    });
    await breaker.recordFailure('search'); // the breaker's registry is how the exporter learns of search
    await breaker.close();
    const flow = new RedisFlowStore({ redis, prefix });
    await flow.markDown('search');
    await flow.setOff(true);

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
      // The first scrape lists the breakers beside the flow reads; from the next one search is known.
      expect(sampleValue(await scrape(), 'stormguard_flow_control_enabled')).toBe(0);
      let s = await scrape();
      expect(sampleValue(s, 'stormguard_flow_control_enabled')).toBe(0);
      expect(sampleValue(s, 'stormguard_flow_dependency_down', { dependency: 'search' })).toBe(1);
      await flow.setOff(false);
      await flow.markUp('search');
      s = await scrape();
      expect(sampleValue(s, 'stormguard_flow_control_enabled')).toBe(1);
      expect(sampleValue(s, 'stormguard_flow_dependency_down', { dependency: 'search' })).toBe(0);
    } finally {
      stop.abort();
      expect(await serving).toBe(0);
      expect(stderr).toBe('');
    }
  });

  it('leave both gauges out of a scrape whose reads time out, and show them again after', async () => {
    // Commands wait for the server to come back rather than fail: only the time bound ends a read.
    const reading = new Redis({ ...server.connection, maxRetriesPerRequest: null });
    reading.on('error', () => {}); // refused connections while the server is stopped
    const errors: unknown[] = [];
    const registry = new Registry();
    const metrics = createMetrics({ registry, readTimeoutMs: 300, onError: (e) => errors.push(e) });
    try {
      metrics.observeFlow(new RedisFlowStore({ redis: reading, prefix: 'timeouts' }), {
        dependencies: ['search'],
      });
      await new RedisFlowStore({ redis, prefix: 'timeouts' }).markDown('search');
      expect(await flowGauges(registry)).toEqual({ enabled: 1, search: 1, mail: undefined });
      await server.stop();
      expect(await flowGauges(registry)).toEqual({
        enabled: undefined,
        search: undefined,
        mail: undefined,
      });
      expect(errors.map((e) => (e as Error).message).sort()).toEqual([
        'flow state of search did not answer within 300ms',
        'the flow kill switch did not answer within 300ms',
      ]);
      // Redis keeps nothing across the restart: no mark, no kill switch.
      await server.restart();
      await reading.ping();
      expect(await flowGauges(registry)).toEqual({ enabled: 1, search: 0, mail: undefined });
    } finally {
      await server.restart();
      metrics.dispose();
      reading.disconnect();
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

/** The data points of the flow-control gauges of one collection, by OpenTelemetry name. */
function points({ resourceMetrics }: { resourceMetrics: ResourceMetrics }) {
  const out: Record<string, { attributes: unknown; value: unknown }[]> = {};
  for (const metric of resourceMetrics.scopeMetrics.flatMap((s) => s.metrics))
    if (/^stormguard\.flow\.(control_enabled|dependency_down)$/.test(metric.descriptor.name))
      out[metric.descriptor.name] = metric.dataPoints.map((p) => ({
        attributes: p.attributes,
        value: p.value,
      }));
  return out;
}
