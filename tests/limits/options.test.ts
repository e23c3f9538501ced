/**
 * The limits options as the adapters take them: defaults, the deprecated flowControl.maxRatePerSecond
 * alias, and the refusals that name what to fix, before anything connects.
 */
import { describe, expect, it } from 'vitest';
import { createConsumer } from '../../src/amqp/consumer.js';
import { createWorker } from '../../src/bullmq/worker.js';
import { isValidationError } from '../../src/errors/validation-error.js';
import { MemoryFlowStore } from '../../src/runtime/flow-control/memory-store.js';
import { limitsWithRateAlias, resolveLimitsOptions } from '../../src/runtime/limits/options.js';
import { workerLimits } from '../../src/runtime/limits/worker-limits.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';

describe('limits options', () => {
  it('applies the defaults', () => {
    const resolved = resolveLimitsOptions({ openai: { maxInFlight: 25 }, crm: { maxRatePerSecond: 50 } }, {});
    expect(resolved).toEqual({
      limits: new Map([
        ['openai', { limit: { maxInFlight: 25 }, leaseMs: 30_000 }],
        ['crm', { limit: { maxRatePerSecond: 50 }, leaseMs: 30_000 }],
      ]),
      stateCacheMs: 250,
      maxPaceWaitMs: 1_000,
      maxStartWaitMs: 30_000,
      slowStartMs: 30_000,
      floorPerSecond: 1,
    });
  });

  it('folds flowControl.maxRatePerSecond into limits, the lower rate winning', () => {
    expect(
      limitsWithRateAlias({ crm: { maxRatePerSecond: 80, maxInFlight: 5 } }, { crm: 50, mail: 10 }),
    ).toEqual({
      crm: { maxRatePerSecond: 50, maxInFlight: 5 },
      mail: { maxRatePerSecond: 10 },
    });
    expect(limitsWithRateAlias({ crm: { maxRatePerSecond: 20 } }, { crm: 50 })).toEqual({
      crm: { maxRatePerSecond: 20 },
    });
    expect(limitsWithRateAlias(undefined, undefined)).toBeUndefined();
    // The alias alone makes a worker limit the dependency, through flow control's store.
    const store = new MemoryFlowStore();
    expect(workerLimits({ flowControl: { store, maxRatePerSecond: { crm: 5 } } })).toEqual({
      limits: { crm: { maxRatePerSecond: 5 } },
      wanted: true,
      ownLimits: true,
    });
  });

  it('refuses bad fields, naming them', () => {
    const refusal = (limits: unknown, options: unknown = {}) => {
      try {
        resolveLimitsOptions(limits as never, options as never, 'createWorker');
      } catch (error) {
        return isValidationError(error) ? error.message : `not a ValidationError: ${String(error)}`;
      }
      return 'accepted';
    };
    expect(refusal({ openai: { maxInFlight: 2.5 } })).toMatch(
      /openai\.maxInFlight: 2\.5 is invalid: must be a whole number >= 1/,
    );
    expect(refusal({ openai: { maxRatePerSecond: 0 } })).toMatch(/openai\.maxRatePerSecond: 0 is invalid/);
    expect(refusal({ openai: { maxInFlight: 1, burst: 3 } })).toMatch(/openai/);
    expect(refusal({ 'a\u0000b': {} })).toMatch(/dependency name must not contain U\+0000/);
    expect(refusal({}, { maxPaceWaitMs: 1.5 })).toMatch(/maxPaceWaitMs: 1\.5 is invalid/);
    expect(refusal({}, { maxStartWaitMs: 600_001 })).toMatch(/maxStartWaitMs: 600001 is invalid: .*600000/);
    expect(refusal({}, { maxStartWaitMs: -1 })).toMatch(/maxStartWaitMs: -1 is invalid/);
    expect(refusal({}, { store: {} })).toMatch(/store: .* is invalid: must be a flow store with limits/);
  });

  it('refuses a RabbitMQ consumer with limits and no store, before it connects', () => {
    const options = {
      connection: 'amqp://guest:guest@127.0.0.1:1/none',
      policy: 'idempotent-internal',
      deadLetters: new MemoryDeadLetterStore(),
      limits: { payments: { maxInFlight: 10 } },
    };
    expect(() => createConsumer('orders', async () => {}, options)).toThrow(
      /limitsOptions\.store|pass limitsOptions\.store/,
    );
  });

  it('refuses a worker on a backend it cannot open a flow store for, before it connects', () => {
    const options = {
      connection: { host: 'db.internal', database: 'app' },
      backend: () => ({}),
      policy: 'idempotent-internal',
      deadLetters: new MemoryDeadLetterStore(),
      limits: { api: { maxInFlight: 10 } },
    };
    expect(() => createWorker('index', async () => {}, options)).toThrow(/pass limitsOptions\.store/);
  });
});
