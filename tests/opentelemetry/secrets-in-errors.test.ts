/**
 * Secrets in errors, traced: with `redactError` on the tracing (and no `redact` on the store), the error a
 * worker hands BullMQ for a job it dead-letters is redacted, so neither BullMQ's failed reason and stack
 * trace nor bullmq-otel's `process` span (its `job failed` event, its status) carry the raw text. Real
 * redis-server, real BullMQ with bullmq-otel, the OpenTelemetry SDK's in-memory exporter.
 */
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { Queue } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorker } from '../../src/bullmq/worker.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { openTelemetryTracing } from '../../src/opentelemetry/index.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { TestRedis, waitFor } from '../helpers/redis-server.js';

let server: TestRedis;
const spans = new InMemorySpanExporter();
const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: spans })] });

beforeAll(async () => {
  server = await TestRedis.start();
  trace.setGlobalTracerProvider(tracerProvider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});
afterAll(async () => {
  trace.disable();
  context.disable();
  await tracerProvider.shutdown();
  await server?.close();
});

describe('a worker with redactError on its tracing', () => {
  it('hands BullMQ and its spans the redacted error of a job it dead-letters', async () => {
    const connection = { ...server.connection, maxRetriesPerRequest: null };
    const queueName = 'secrets';
    const store = new MemoryDeadLetterStore();
    const queue = new Queue(queueName, { connection });
    const worker = createWorker(
      queueName,
      async () => {
        throw new TransientError('503 Service Unavailable for https://psp.example/charge?token=s3cr3t');
      },
      {
        connection,
        policy: definePolicy({ name: 'once', maxAttempts: 1, backoff: { type: 'fixed', delayMs: 10 } }),
        deadLetters: store,
        instrumentation: openTelemetryTracing({
          redactError: (e) => ({ ...e, message: e.message.replace(/token=\w+/g, 'token=[redacted]') }),
        }),
        workerOptions: { telemetry: new BullMQOtel({ tracerName: 'worker' }) },
      },
    );
    try {
      const job = await queue.add('charge', { order: 1 });
      await waitFor(
        async () => (await queue.getJobState(job.id ?? '')) === 'failed',
        10_000,
        'the failed job',
      );
      const failed = await queue.getJob(job.id ?? '');
      const handed = `${failed?.failedReason}\n${(failed?.stacktrace ?? []).join('\n')}`;
      expect(failed?.failedReason).toContain('token=[redacted]');
      expect(handed).not.toContain('s3cr3t');
      await waitFor(
        () => spans.getFinishedSpans().some((s) => s.name.startsWith('process')),
        5_000,
        "bullmq-otel's process span",
      );
      const process = spans.getFinishedSpans().filter((s) => s.name.startsWith('process'));
      const recorded = JSON.stringify(
        process.map((s) => ({ events: s.events, status: s.status, attributes: s.attributes })),
      );
      expect(recorded).toContain('token=[redacted]');
      expect(recorded).not.toContain('s3cr3t');
      const stormguard = JSON.stringify(
        spans
          .getFinishedSpans()
          .map((s) => ({ events: s.events, status: s.status, attributes: s.attributes })),
      );
      expect(stormguard).not.toContain('s3cr3t');
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
