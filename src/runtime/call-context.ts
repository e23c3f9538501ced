import type { CircuitBreaker } from '../breaker/circuit-breaker.js';
import { dependencyNameProblem } from '../budget/dependency-name.js';
import { PermanentError } from '../errors/permanent-error.js';
import type { AttemptTrace } from './instrumentation.js';
import type { LimitAnswer, LimitSlot } from './limits/controller.js';
import { LimitHeldError } from './limits/limit-held-error.js';

/**
 * What a stormguard processor receives besides the job: `call` attributes each downstream call to the
 * dependency it reaches, so a failure is charged to the system that failed and a success refills that
 * system's retry budget.
 *
 * @example
 * const worker = createWorker('index', async (job, ctx) => {
 *   const doc = await ctx.call('db', () => db.load(job.data.docId));
 *   await ctx.call('search', () => search.index(doc));
 * }, { connection, policy: 'idempotent-internal', budget });
 */
export interface CallContext {
  /**
   * Runs one downstream call. Before it, takes a slot of the dependency's fleet-wide limits (when it has
   * any: the worker's `limits`, or an operator's override), waiting up to `maxPaceWaitMs`, and throws a
   * `LimitHeldError` without calling `fn` past that (the worker then holds the job without using an
   * attempt; let it propagate); then asks the dependency's breaker (when the worker has one) and throws a
   * `BrokenCircuitError` without calling `fn` when the breaker refuses. After it, gives the slot back,
   * records a success for the dependency (batched in memory: no Redis round trip) or charges the failure
   * to it, then returns or rethrows exactly what `fn` did. A 429 or 503 with Retry-After from a limited
   * dependency holds that dependency fleet-wide (docs/limits.md).
   */
  call<T>(dependency: string, fn: () => T | Promise<T>, options?: CallOptions): Promise<T>;
  /** The job's own dependency: `dependencies[job.name]`, or the job name when it has no mapping. */
  readonly dependency: string;
  /** This attempt's number as stormguard counts it (1 for the first; deferrals do not count). */
  readonly attempt: number;
  /** The job's idempotency key, when the worker was given `idempotency.key` and it returned one. */
  readonly idempotencyKey: string | undefined;
}

/**
 * Options of one `ctx.call`.
 *
 * @example
 * await ctx.call('openai', () => complete(prompt), { cost: Math.ceil(prompt.length / 4_000) });
 */
export interface CallOptions {
  /**
   * What the call weighs against the dependency's limits (its `maxInFlight` and `maxRatePerSecond` count
   * cost units): a whole number >= 1, e.g. thousands of tokens. Default 1.
   */
  cost?: number | undefined;
}

/**
 * Limits as `ctx.call` uses them: a slot before the call, given back after it, and the failure told (a
 * Retry-After answer holds the dependency). `LimitController` is one.
 *
 * @example
 * const limits: CallLimits = new LimitController({ openai: { maxInFlight: 25 } }, { store }, settings);
 */
export interface CallLimits {
  /** `beforeStart`: the job has not started yet (its known dependency), which may wait longer. */
  acquire(dependency: string, cost: number, how?: { beforeStart?: boolean }): Promise<LimitAnswer>;
  release(slot: LimitSlot, ok: boolean): void;
  noteFailure(dependency: string, error: unknown): Promise<unknown>;
}

/**
 * A breaker as `ctx.call` uses it: `execute` asks it before the call (throwing a `BrokenCircuitError`
 * instead of calling when it refuses) and tells it the outcome after. `isFailure` says which errors count
 * against the dependency's health: the worker passes "the policy would retry it".
 *
 * @example
 * const breaker: CallBreaker = new CircuitBreaker({ store: new RedisBreakerStore({ redis }) });
 */
export type CallBreaker = Pick<CircuitBreaker, 'execute'>;

/**
 * The {@link CallContext} of one attempt. It remembers which dependency each failed call belonged to, so the
 * worker can charge an error the processor rethrows (as it is, or wrapped as the `cause` of another) to that
 * dependency; any other error is charged to the job's own dependency.
 */
export class JobCallContext implements CallContext {
  /** Downstream calls made through `call` in this attempt. */
  calls = 0;
  /** Made on the first failed call: a job that succeeds allocates none. */
  #failedCalls: Map<unknown, string> | undefined;
  /** Slots taken before the job started, by dependency: the first call to each uses its slot. */
  #reserved: Map<string, LimitSlot> | undefined;

  constructor(
    readonly dependency: string,
    readonly attempt: number,
    readonly idempotencyKey: string | undefined,
    /** Called after each successful call: the worker records it in the budget (batched, in memory). */
    readonly onSuccess: (dependency: string) => void,
    private readonly breaker?: CallBreaker,
    private readonly isFailure?: (error: unknown) => boolean,
    /** The attempt's trace, when an instrumentation follows it: each call gets a span of its own. */
    private readonly trace?: AttemptTrace,
    /** The worker's limits: a slot around each call. */
    private readonly limits?: CallLimits,
  ) {}

  async call<T>(dependency: string, fn: () => T | Promise<T>, options?: CallOptions): Promise<T> {
    const problem = dependencyNameProblem(dependency);
    if (problem) {
      // A bug in the processor: no retry can fix it, so it is dead-lettered (reason `permanent`) and
      // visible, before `fn` runs (so no side effect happens for a call that could not be accounted).
      throw new PermanentError(
        `ctx.call: the dependency ${problem}; name the downstream system, e.g. "search" (got ${JSON.stringify(dependency)})`,
      );
    }
    const cost = options?.cost ?? 1;
    if (!(Number.isSafeInteger(cost) && cost >= 1))
      throw new PermanentError(
        `ctx.call: cost must be a whole number >= 1 (the units the call weighs against ${JSON.stringify(dependency)}'s limits), got ${String(cost)}`,
      );
    const slot = this.limits ? await this.#slot(this.limits, dependency, cost) : undefined;
    this.calls++;
    let ok = false;
    try {
      const value = this.trace
        ? await this.trace.call(dependency, async () => this.#execute(dependency, fn))
        : await this.#execute(dependency, fn);
      ok = true;
      this.onSuccess(dependency);
      return value;
    } catch (error) {
      this.#failedCalls ??= new Map();
      this.#failedCalls.set(error, dependency);
      // Recorded before the slot goes back: the give-back's exchange then meets the hold.
      if (this.limits && slot?.lease !== undefined) await this.limits.noteFailure(dependency, error);
      throw error;
    } finally {
      if (slot) this.limits?.release(slot, ok);
    }
  }

  /**
   * Keeps a slot taken before the job started for the job's first call to its dependency. A job that ends
   * without using it gives it back ({@link releaseReserved}).
   */
  reserve(slot: LimitSlot): void {
    this.#reserved ??= new Map();
    this.#reserved.set(slot.dependency, slot);
  }

  /**
   * Gives back the slots taken before the job started that no call used (the job ended). `ok`: the job
   * succeeded without any `ctx.call`, so its run was the call (it ends probing after a hold).
   */
  releaseReserved(ok: boolean): void {
    if (!this.#reserved) return;
    for (const slot of this.#reserved.values()) this.limits?.release(slot, ok);
    this.#reserved = undefined;
  }

  /** The call's slot: the one reserved for the dependency when its cost fits, else a new one. */
  async #slot(limits: CallLimits, dependency: string, cost: number): Promise<LimitSlot> {
    const reserved = this.#reserved?.get(dependency);
    if (reserved) {
      this.#reserved?.delete(dependency);
      if (reserved.cost === cost || reserved.lease === undefined) return reserved;
      limits.release(reserved, false);
    }
    const answer = await limits.acquire(dependency, cost);
    if (answer.type === 'slot') return answer.slot;
    throw new LimitHeldError(dependency, answer.by, answer.retryInMs);
  }

  /** The call itself: through the breaker when the worker has one. */
  #execute<T>(dependency: string, fn: () => T | Promise<T>): T | Promise<T> {
    return this.breaker
      ? this.breaker.execute(dependency, fn, this.isFailure ? { isFailure: this.isFailure } : {})
      : fn();
  }

  /**
   * The dependency a failure belongs to: the call that threw `error` or, for an error that wraps one, the
   * call that threw its `cause` (followed a few levels). Undefined when no call of this attempt threw it.
   */
  dependencyOf(error: unknown): string | undefined {
    let current = error;
    for (let depth = 0; depth < 8; depth++) {
      const dependency = this.#failedCalls?.get(current);
      if (dependency !== undefined) return dependency;
      if (typeof current !== 'object' || current === null || !('cause' in current)) return undefined;
      current = (current as { cause?: unknown }).cause;
    }
    return undefined;
  }
}
