import fc from 'fast-check';
import { expect } from 'vitest';
import type { FakeClock } from '../common/clock.js';
import { MemoryBreakerStore } from './memory-store.js';
import { resolveBreakerOptions } from './options.js';
import type { BreakerBatch, BreakerOverrideOp, BreakerStore } from './types.js';

/**
 * Opens the shared store under test on `clock` for property run `run`; each run gets state of its own.
 * `dependency` is the name the run uses (stores that share one schema across runs need a fresh name).
 */
export type OpenAgreeingStore = (
  clock: FakeClock,
  run: number,
) => { store: BreakerStore & Required<Pick<BreakerStore, 'recordBatch'>>; dependency: string };

/**
 * The property every shared breaker store's server step must hold: on any sequence of acquires, outcomes
 * (with no ticket, the oldest or the newest probe ticket issued), batched successes, reads and clock steps,
 * it answers exactly as the TypeScript machine behind `MemoryBreakerStore` does. Written once, so the Lua
 * script and the plpgsql function are checked against the same operations.
 *
 * @example
 * it('the Lua script and the TypeScript machine agree', () =>
 *   breakerStoreAgreesWithMachine((clock, run) => ({ store: new RedisBreakerStore({ redis, prefix: `a${run}`, timeOverride: clock }), dependency: 'd' }), clockAt, 50));
 */
export async function breakerStoreAgreesWithMachine(
  open: OpenAgreeingStore,
  newClock: () => FakeClock,
  numRuns: number,
): Promise<void> {
  const options = resolveBreakerOptions({
    windowMs: 1_000,
    minimumVolume: 4,
    consecutiveFailures: 3,
    coolDownMs: 300,
    halfOpenProbes: 2,
    successesToClose: 2,
  });
  type Op = 'acquire' | 'success' | 'failure' | 'peek' | 'successes' | BreakerOverrideOp;
  const step = fc.record({
    op: fc.oneof(
      { arbitrary: fc.constant<Op>('acquire'), weight: 3 },
      { arbitrary: fc.constant<Op>('success'), weight: 3 },
      { arbitrary: fc.constant<Op>('failure'), weight: 3 },
      { arbitrary: fc.constant<Op>('peek'), weight: 1 },
      { arbitrary: fc.constant<Op>('successes'), weight: 1 },
      // An operator's override now and then, so a held breaker meets every other operation.
      { arbitrary: fc.constantFrom<Op>('force-open', 'force-closed', 'reset'), weight: 1 },
    ),
    // Which probe ticket an outcome carries: none, the oldest one issued, or the newest one.
    ticket: fc.constantFrom('none', 'oldest', 'newest'),
    // Successes batched ahead of a recorded outcome (0 mostly: a plain record).
    batched: fc.oneof({ arbitrary: fc.constant(0), weight: 3 }, fc.integer({ min: 1, max: 5 })),
    // Mostly bursts at one instant, sometimes a step past a bucket, a cool-down or the window.
    advanceMs: fc.oneof(
      { arbitrary: fc.constant(0), weight: 3 },
      { arbitrary: fc.integer({ min: 1, max: 400 }), weight: 2 },
    ),
  });
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 30, maxLength: 80 }), async (steps) => {
      const clock = newClock();
      const memory = new MemoryBreakerStore({ clock });
      const { store: shared, dependency: dep } = open(clock, ++run);
      const tickets: string[] = [];
      for (const { op, advanceMs, batched, ticket: which } of steps) {
        clock.advance(advanceMs);
        const ticket = which === 'oldest' ? tickets.shift() : which === 'newest' ? tickets.pop() : undefined;
        const [a, b] =
          op === 'force-open' || op === 'force-closed' || op === 'reset'
            ? await Promise.all([
                memory.override(dep, op, WHY, options),
                shared.override!(dep, op, WHY, options),
              ])
            : op === 'acquire'
              ? await Promise.all([memory.acquire(dep, options), shared.acquire(dep, options)])
              : op === 'peek'
                ? await Promise.all([memory.read(dep, options), shared.read(dep, options)])
                : op === 'successes' || batched > 0
                  ? await Promise.all([
                      memory.recordBatch(dep, batchOf(op, batched, ticket), options),
                      shared.recordBatch(dep, batchOf(op, batched, ticket), options),
                    ])
                  : await Promise.all([
                      memory.record(dep, op, options, ticket),
                      shared.record(dep, op, options, ticket),
                    ]);
        expect(b).toEqual(a);
        const issued = (a as { ticket?: string }).ticket;
        if (issued !== undefined) tickets.push(issued);
      }
    }),
    { numRuns, seed: 20261202 },
  );
}

const WHY = { reason: 'agreement check', by: 'property' };

function batchOf(
  op: 'success' | 'failure' | 'successes',
  successes: number,
  ticket: string | undefined,
): BreakerBatch {
  if (op === 'successes') return { successes };
  return ticket === undefined ? { successes, outcome: op } : { successes, outcome: op, ticket };
}
