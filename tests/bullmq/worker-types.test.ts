import type { Job, Worker } from 'bullmq';
import { describe, expectTypeOf, it } from 'vitest';
import type { createWorker, StormguardWorker } from '../../src/bullmq/worker.js';
import type { StormguardWorkerOptions } from '../../src/bullmq/worker-options.js';
import type { CallContext } from '../../src/runtime/call-context.js';

// Compile-time checks: `tsc` fails on a broken contract; vitest only runs the (empty) bodies.
describe('createWorker types', () => {
  it('returns a BullMQ Worker of the processor data and result types', () => {
    type Made = ReturnType<typeof createWorker<{ docId: string }, number>>;
    expectTypeOf<Made>().toEqualTypeOf<StormguardWorker<{ docId: string }, number, string>>();
    expectTypeOf<Made>().toExtend<Worker<{ docId: string }, number, string>>();
  });

  it('hands the processor a typed job and a call context', () => {
    type Processor = Parameters<typeof createWorker<{ docId: string }, void>>[1];
    expectTypeOf<Parameters<Processor>[0]>().toEqualTypeOf<Job<{ docId: string }, void, string>>();
    expectTypeOf<Parameters<Processor>[1]>().toEqualTypeOf<CallContext>();
    expectTypeOf<CallContext['call']>().returns.toEqualTypeOf<Promise<unknown>>();
  });

  it('types the idempotency key function by the job data', () => {
    type Key = NonNullable<StormguardWorkerOptions<{ order: string }>['idempotency']>['key'];
    expectTypeOf<Parameters<Key>[0]['data']>().toEqualTypeOf<{ order: string }>();
    expectTypeOf<ReturnType<Key>>().toEqualTypeOf<string | undefined>();
  });
});
