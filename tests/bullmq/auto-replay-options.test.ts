import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { MemoryReplayRunStore } from '../../src/runtime/replay-runs.js';

// Refused before the worker connects: the connection below is never dialled.
const base = {
  connection: { host: '127.0.0.1', port: 1, lazyConnect: true },
  policy: 'idempotent-internal',
  deadLetters: new MemoryDeadLetterStore(),
  workerOptions: { autorun: false },
} as const;
const runs = new MemoryReplayRunStore();

describe('createWorker autoReplay options', () => {
  it('needs a budget or a breaker to tell health by', () => {
    expect(() => createWorker('q', async () => undefined, { ...base, autoReplay: { runs } })).toThrow(
      /autoReplay needs a budget or a breaker/,
    );
  });

  it('needs a dead-letter store', () => {
    expect(() =>
      createWorker('q', async () => undefined, {
        ...base,
        deadLetters: false,
        attemptState: new MemoryDeadLetterStore(),
        breaker: new CircuitBreaker({ consecutiveFailures: 3 }),
        autoReplay: { runs },
      }),
    ).toThrow(/autoReplay replays dead letters, so it needs a dead-letter store/);
  });

  it('names a bad field and the rule', () => {
    const breaker = new CircuitBreaker({ consecutiveFailures: 3 });
    expect(() =>
      createWorker('q', async () => undefined, {
        ...base,
        breaker,
        autoReplay: { runs, reasons: ['permanent' as 'breaker-open'] },
      }),
    ).toThrow(/autoReplay.*reasons/);
    expect(() =>
      createWorker('q', async () => undefined, { ...base, breaker, autoReplay: { runs, ratePerSecond: 0 } }),
    ).toThrow(/autoReplay.*ratePerSecond/);
    expect(() =>
      createWorker('q', async () => undefined, { ...base, breaker, autoReplay: { runs: {} as never } }),
    ).toThrow(/autoReplay.*runs.*ReplayRunStore/);
    for (const maxReplays of [0, 1.5, -1])
      expect(() =>
        createWorker('q', async () => undefined, { ...base, breaker, autoReplay: { runs, maxReplays } }),
      ).toThrow(/autoReplay.*maxReplays/);
  });
});
