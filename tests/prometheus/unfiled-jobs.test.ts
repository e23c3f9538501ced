import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/common/events.js';
import { createMetrics } from '../../src/prometheus/index.js';
import type { WorkerEvents } from '../../src/runtime/worker-events.js';
import { parseExposition, sampleValue } from './exposition.js';

describe('stormguard_jobs_unfiled_total', () => {
  it('counts each job whose dead letter could not be filed, by the reason it had', async () => {
    const registry = new Registry();
    const metrics = createMetrics({ registry });
    const worker = new EventBus<WorkerEvents>();
    metrics.observeWorker({ events: worker });
    const job = { queue: 'payments', task: 'charge', dependency: 'psp' };
    const unfiled = { ...job, errorClass: 'UnstorableValueError', refusal: 'cannot hold it' };
    worker.emit('unfiled', { ...unfiled, reason: 'max-attempts' });
    worker.emit('unfiled', { ...unfiled, reason: 'max-attempts' });
    worker.emit('unfiled', { ...unfiled, reason: 'bookkeeping' });
    const s = parseExposition(await registry.metrics());
    expect(sampleValue(s, 'stormguard_jobs_unfiled_total', { ...job, reason: 'max-attempts' })).toBe(2);
    expect(sampleValue(s, 'stormguard_jobs_unfiled_total', { ...job, reason: 'bookkeeping' })).toBe(1);
  });
});
