import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { type Clock, systemClock } from '../common/clock.js';
import { EventBus } from '../common/events.js';
import { parseWith } from '../common/validation.js';
import { ClaimLostError } from '../errors/claim-lost-error.js';
import { InvalidInputError, isInvalidInputError } from '../errors/invalid-input-error.js';
import { TransientError } from '../errors/transient-error.js';
import type { IdempotencyStore } from './store.js';

/**
 * Options of {@link idempotencyGuard}. With Redis, `redisIdempotencyGuard({ redis })` from `stormguard/redis`
 * builds the store for you.
 *
 * @example
 * const options: IdempotencyGuardOptions = { store, ttlMs: 7 * 86_400_000, inFlightTtlMs: 30_000 };
 */
export interface IdempotencyGuardOptions {
  /**
   * Where claims and outcomes are kept: any {@link IdempotencyStore} (`RedisIdempotencyStore`,
   * `PostgresIdempotencyStore`, a `MemoryIdempotencyStore` in tests).
   */
  store: IdempotencyStore;
  /**
   * How long a finished outcome is kept, ms. Must be at least the policy's `maxAge`: a key that expires
   * before the last retry makes that retry run the side effect again. Default: 86 400 000 (24 h).
   */
  ttlMs?: number;
  /**
   * How long a claim on a running key lasts without renewal, ms: a worker that crashed mid-work blocks
   * its key at most this long. The guard renews the claim every third of it while the work runs.
   * Default: 30 000.
   */
  inFlightTtlMs?: number;
  /**
   * How long a caller waits for another caller's running work before giving up with a TransientError
   * (so its job is retried later). Default: twice `inFlightTtlMs`, long enough for a crashed caller's
   * claim to expire and be taken over.
   */
  waitTimeoutMs?: number;
  /** First poll interval while waiting, ms; doubles up to 1 000. Default: 25. */
  pollMs?: number;
  /**
   * How many times the guard tries to store an outcome after the work ran: a write the store rejected (a
   * connection lost, a failover, no replica confirming it in time) is tried again, which is safe because
   * finishing again with the same token and outcome counts as stored. 1 tries once. Default: 3.
   */
  outcomeAttempts?: number;
  /** Pause before the second try to store an outcome, ms; doubles before each further one. Default: 250. */
  outcomeRetryDelayMs?: number;
  /**
   * Where the guard reads the time it has waited for another caller (`waitTimeoutMs`). Claims and outcomes
   * expire on the store's clock (Redis: `PEXPIRE`), never this one. Default: the system clock.
   */
  clock?: Clock;
}

/**
 * What {@link IdempotencyGuard.run} returns: the outcome and whether this call ran the work.
 *
 * @example
 * const { value, ran } = await guard.run('mail:42', send); // ran is false on a retry
 */
export interface OnceResult<T> {
  value: T;
  /** True when this call ran `fn`; false when it returned the outcome a previous call stored. */
  ran: boolean;
}

/**
 * Events of an {@link IdempotencyGuard}: what it could not keep, by key. Logs and alerts subscribe.
 *
 * @example
 * guard.events.on('claim-lost', (e) => log.warn(`idempotency claim on ${e.key} lost (${e.detectedBy})`));
 */
export interface IdempotencyGuardEvents {
  /**
   * The running work's claim on `key` expired before it finished: found by a renewal that came too late
   * (`renewal`, the work's signal is aborted then) or by the store refusing the outcome (`finish`).
   * Another caller may run the work meanwhile.
   */
  'claim-lost': { key: string; detectedBy: 'renewal' | 'finish' };
  /** The work on `key` ran and another caller's outcome was stored instead: it may have run twice. */
  'duplicate-run': { key: string };
  /**
   * The work on `key` ran, the call returned its value (the job completes), but every one of `attempts`
   * tries to store the outcome was rejected; `error` is the last rejection. The outcome may be missing
   * (or, when the store kept a write it could not confirm, lost in a later failover): a later caller with
   * this key, such as a replay of the job, may run the side effect again.
   */
  'outcome-not-stored': { key: string; error: unknown; attempts: number };
}

/**
 * What the work run under a key is given: `signal` is aborted when the guard learns that its claim was
 * lost, so work that has not reached its side effect yet can stop instead of risking a second one.
 *
 * @example
 * await guard.once(key, ({ signal }) => fetch(url, { method: 'POST', signal }));
 */
export interface GuardedWork {
  signal: AbortSignal;
}

const OptionsSchema = z.object({
  ttlMs: z.number().int().positive(),
  inFlightTtlMs: z.number().int().positive(),
  waitTimeoutMs: z.number().int().nonnegative(),
  pollMs: z.number().int().positive(),
  outcomeAttempts: z.number().int().min(1).max(100),
  outcomeRetryDelayMs: z.number().int().nonnegative(),
});

const MAX_POLL_MS = 1_000;

/**
 * Runs a side effect at most once per key across a fleet, **while the claim holds**. Concurrent callers
 * with one key run `fn` once and all get its outcome; a retry or a replay of finished work gets the stored
 * outcome without running `fn`.
 *
 * The guarantee, precisely: a caller runs `fn` only under a claim on the key, which lasts
 * `inFlightTtlMs` and is renewed every third of it while `fn` runs. If no renewal reaches the store for a
 * whole `inFlightTtlMs` (the event loop was blocked, or the store unreachable), the claim expires and
 * another caller may run `fn` too. The guard never hides that: the late renewal emits `claim-lost` and
 * aborts `fn`'s `signal`; if another caller's outcome was stored first, this call rejects with a
 * {@link ClaimLostError} naming the key (and `duplicate-run` is emitted), so the possible second side
 * effect is visible; a retry then gets the stored outcome. If nobody took the key over, the outcome is
 * stored and returned as usual. The outcome is stored as JSON (so a `Date` comes back as a string, `undefined` as `undefined`);
 * a value JSON cannot hold is returned to the caller that ran `fn` and stored as `undefined`.
 * A failure is never stored: the key is freed so a retry may run `fn` again. When the store cannot be reached
 * before `fn` runs, `once` rejects and `fn` does not run (never unguarded); a rejected write of the outcome
 * is tried again (`outcomeAttempts`, backing off from `outcomeRetryDelayMs`), and when every try fails the
 * caller still gets its value and `outcome-not-stored` is emitted (a later caller may run `fn` again).
 *
 * @example
 * const guard = idempotencyGuard({ store, ttlMs: 7 * 86_400_000 });
 * const receipt = await guard.once(`charge:${order.id}`, () => payments.charge(order));
 */
export class IdempotencyGuard {
  /** 'claim-lost', 'duplicate-run', 'outcome-not-stored'. */
  readonly events = new EventBus<IdempotencyGuardEvents>();
  readonly #store: IdempotencyStore;
  readonly #options: z.output<typeof OptionsSchema>;
  readonly #clock: Clock;

  constructor(options: IdempotencyGuardOptions) {
    const store = options?.store;
    if (!store || typeof store.begin !== 'function')
      throw new InvalidInputError(
        'idempotency guard: give `store` (an IdempotencyStore; with Redis, redisIdempotencyGuard({ redis }) from stormguard/redis builds one)',
      );
    this.#store = store;
    if (options.clock !== undefined && typeof options.clock?.now !== 'function')
      throw new InvalidInputError('idempotency guard: `clock` must have a now() method (or leave it unset)');
    this.#clock = options.clock ?? systemClock;
    const inFlightTtlMs = options.inFlightTtlMs ?? 30_000;
    this.#options = parseWith(
      OptionsSchema,
      {
        ttlMs: options.ttlMs ?? 86_400_000,
        inFlightTtlMs,
        waitTimeoutMs: options.waitTimeoutMs ?? 2 * inFlightTtlMs,
        pollMs: options.pollMs ?? 25,
        outcomeAttempts: options.outcomeAttempts ?? 3,
        outcomeRetryDelayMs: options.outcomeRetryDelayMs ?? 250,
      },
      'idempotency guard',
    );
  }

  /** How long outcomes are kept, ms: compare it with a policy's `maxAge`. */
  get ttlMs(): number {
    return this.#options.ttlMs;
  }

  /** How long a claim lasts without renewal, ms. */
  get inFlightTtlMs(): number {
    return this.#options.inFlightTtlMs;
  }

  /** Runs `fn` once for `key` and returns its outcome (see the class documentation). */
  async once<T>(key: string, fn: (work: GuardedWork) => T | Promise<T>): Promise<T> {
    return (await this.run(key, fn)).value;
  }

  /** Like {@link once}, and says whether this call ran `fn` or returned a stored outcome. */
  async run<T>(key: string, fn: (work: GuardedWork) => T | Promise<T>): Promise<OnceResult<T>> {
    if (typeof key !== 'string' || key === '')
      throw new InvalidInputError('idempotency guard: the key must be a non-empty string');
    const { ttlMs, inFlightTtlMs, waitTimeoutMs } = this.#options;
    const token = randomUUID();
    const started = this.#clock.now();
    let pollMs = this.#options.pollMs;
    for (;;) {
      const claim = await this.#store.begin(key, token, inFlightTtlMs);
      if (claim.state === 'done') return { value: decode<T>(claim.value), ran: false };
      if (claim.state === 'run') return { value: await this.#runClaimed(key, token, fn, ttlMs), ran: true };
      const waited = this.#clock.now() - started;
      if (waited >= waitTimeoutMs)
        throw new TransientError(
          `idempotency key "${key}" is still being processed by another worker after ${waited}ms; retry later`,
        );
      await sleep(Math.max(1, Math.min(pollMs, claim.expiresInMs + 1, waitTimeoutMs - waited)));
      pollMs = Math.min(pollMs * 2, MAX_POLL_MS);
    }
  }

  async #runClaimed<T>(
    key: string,
    token: string,
    fn: (work: GuardedWork) => T | Promise<T>,
    ttlMs: number,
  ): Promise<T> {
    const { inFlightTtlMs } = this.#options;
    const lost = new AbortController();
    const claimLost = (detectedBy: 'renewal' | 'finish') => {
      if (lost.signal.aborted) return;
      lost.abort(new ClaimLostError(key, undefined));
      this.events.emit('claim-lost', { key, detectedBy });
    };
    // Renew the claim while the work runs, so work longer than the claim is not started twice. A renewal
    // the store refuses means the claim expired first: say so at once, and tell the work.
    const renewal = setInterval(
      () => {
        this.#store.renew(key, token, inFlightTtlMs).then(
          (renewed) => {
            if (!renewed) claimLost('renewal');
          },
          () => {},
        );
      },
      Math.max(1, Math.floor(inFlightTtlMs / 3)),
    );
    renewal.unref();
    let value: T;
    try {
      value = await fn({ signal: lost.signal });
    } catch (error) {
      clearInterval(renewal);
      await this.#store.release(key, token).catch(() => {});
      throw error;
    }
    clearInterval(renewal);
    // The side effect has happened. If the outcome cannot be stored even after the retries, the caller
    // still gets its value: failing the job would make its retry run the side effect again at once.
    const stored = await this.#storeOutcome(key, token, encode(value), ttlMs);
    if (stored === 'not-stored') return value;
    if (!stored) {
      // Refused: another caller claimed the key after ours expired, or already stored its outcome.
      claimLost('finish');
      this.events.emit('duplicate-run', { key });
      throw new ClaimLostError(key, value);
    }
    return value;
  }

  /**
   * Stores the outcome, trying again after a rejection (a write whose reply was lost may have landed: the
   * store answers a repeat by the same token and outcome as stored). `'not-stored'` once every try failed.
   */
  async #storeOutcome(
    key: string,
    token: string,
    value: string,
    ttlMs: number,
  ): Promise<boolean | 'not-stored'> {
    const { outcomeAttempts, outcomeRetryDelayMs } = this.#options;
    let delayMs = outcomeRetryDelayMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#store.finish(key, token, value, ttlMs);
      } catch (error) {
        if (attempt >= outcomeAttempts || isInvalidInputError(error)) {
          this.events.emit('outcome-not-stored', { key, error, attempts: attempt });
          return 'not-stored';
        }
      }
      await sleep(delayMs);
      delayMs *= 2;
    }
  }
}

/**
 * Builds an {@link IdempotencyGuard} on `store`. Defaults: ttlMs 24 h, inFlightTtlMs 30 s,
 * waitTimeoutMs 2 × inFlightTtlMs, pollMs 25, outcomeAttempts 3, outcomeRetryDelayMs 250, clock the
 * system clock.
 *
 * @example
 * const guard = idempotencyGuard({ store: new MemoryIdempotencyStore(), ttlMs: 86_400_000, inFlightTtlMs: 30_000 });
 * await guard.once('welcome-mail:42', () => mailer.send(user));
 */
export function idempotencyGuard(options: IdempotencyGuardOptions): IdempotencyGuard {
  return new IdempotencyGuard(options);
}

function encode(value: unknown): string {
  try {
    return JSON.stringify({ value }) ?? '{}';
  } catch {
    return '{}';
  }
}

function decode<T>(stored: string): T {
  return (JSON.parse(stored) as { value?: T }).value as T;
}
