import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../src/breaker/circuit-breaker.js';
import { MemoryBudgetStore } from '../../src/budget/memory-store.js';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { FakeClock } from '../../src/common/clock.js';
import { EventBus } from '../../src/common/events.js';
import { seededRandom } from '../../src/common/random.js';
import { TransientError } from '../../src/errors/transient-error.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import type { AttemptState, AttemptStateStore, JobRef } from '../../src/runtime/contracts.js';
import type { JobEvents } from '../../src/runtime/events.js';
import type { JobHandle } from '../../src/runtime/job-handle.js';
import { JobRuntime } from '../../src/runtime/job-runtime.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import type { RunOutcome } from '../../src/runtime/run-outcome.js';

// A job with no dependency mapping is its own dependency. Its name reaches the budget, the breaker and
// the stores through `decide`: a name one of them refuses there used to send the job round the
// bookkeeping retry (every 5 s) for ever, its processor running each time.

class MapAttempts implements AttemptStateStore {
  readonly states = new Map<string, AttemptState>();
  readAttempts(job: JobRef): AttemptState | undefined {
    return this.states.get(job.jobId);
  }
  writeAttempts(job: JobRef, state: AttemptState): void {
    this.states.set(job.jobId, state);
  }
  clearAttempts(job: JobRef): void {
    this.states.delete(job.jobId);
  }
}

function setup() {
  const clock = new FakeClock(1_000_000);
  const attempts = new MapAttempts();
  const deadLetters = new MemoryDeadLetterStore({ clock });
  const internal: string[] = [];
  const runtime = new JobRuntime({
    queue: 'index',
    policy: definePolicy({
      name: 'names',
      maxAttempts: 3,
      backoff: { type: 'fixed', delayMs: 100 },
      jitter: 'none',
    }),
    dependencies: {},
    budget: new RetryBudget({ store: new MemoryBudgetStore({ clock }), clock }),
    breaker: new CircuitBreaker({ clock, consecutiveFailures: 50 }),
    attempts,
    deadLetters,
    clock,
    random: seededRandom(1),
    events: new EventBus<JobEvents>(),
    internalError: (error) => internal.push(String(error)),
    maxStalls: 1,
  });
  return { clock, attempts, deadLetters, internal, runtime };
}

/** Runs a job named `name` whose processor always fails transiently, start after start, as a queue would. */
async function runToEnd(name: string, maxStarts = 8) {
  const { clock, attempts, deadLetters, internal, runtime } = setup();
  const moves: number[] = [];
  let processorRuns = 0;
  let outcome: RunOutcome<never> | undefined;
  for (let starts = 1; starts <= maxStarts; starts++) {
    const job: JobHandle = {
      ref: { queue: 'index', jobId: '1', createdAt: 1_000_000 },
      name,
      data: {},
      opts: {},
      starts,
      finishes: starts - 1,
      stalls: 0,
      moveToDelayed: async (dueAtMs) => {
        moves.push(dueAtMs - clock.now());
      },
    };
    outcome = await runtime.run(job, async () => {
      processorRuns++;
      throw new TransientError('503 from the index');
    });
    if (outcome.type !== 'delayed') break;
    clock.advance(moves.at(-1) ?? 0);
  }
  const records = await deadLetters.list('index', { limit: 10 });
  return { outcome, moves, processorRuns, records, internal, attempts };
}

describe('a job name as its own dependency', () => {
  it('a job named " " with a budget and a breaker is retried by its policy and dead-lettered after 3 attempts', async () => {
    const run = await runToEnd(' ');
    expect(run.internal).toEqual([]);
    // Two policy retries of 100 ms, never the 5 s bookkeeping retry.
    expect(run.moves).toEqual([100, 100]);
    expect(run.processorRuns).toBe(3);
    expect(run.outcome?.type).toBe('dead-lettered');
    expect(run.records.records.map((r) => [r.name, r.reason, r.dependency])).toEqual([
      [' ', 'max-attempts', ' '],
    ]);
  });

  it.each([
    ['empty', ''],
    ['over 200 characters', 'x'.repeat(250)],
    ['holding U+0000', 'index\u0000doc'],
    ['holding a lone surrogate', 'index\uD800'],
  ])('a job name %s ends dead-lettered too, under a mapped dependency', async (_, name) => {
    const run = await runToEnd(name);
    expect(run.internal).toEqual([]);
    expect(run.moves).toEqual([100, 100]);
    expect(run.processorRuns).toBe(3);
    const [record] = run.records.records;
    expect(record?.name).toBe(name);
    expect(record?.reason).toBe('max-attempts');
    expect(record?.dependency).toMatch(/~[0-9a-f]{32}$/);
    expect(record?.dependency.length).toBeLessThanOrEqual(200);
  });
});
