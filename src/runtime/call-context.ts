import type { CircuitBreaker } from '../breaker/circuit-breaker.js';
import { dependencyNameProblem } from '../budget/dependency-name.js';
import { PermanentError } from '../errors/permanent-error.js';
import type { AttemptTrace } from './instrumentation.js';

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
   * Runs one downstream call. Before it, asks the dependency's breaker (when the worker has one) and throws
   * a `BrokenCircuitError` without calling `fn` when the breaker refuses. After it, records a success for
   * the dependency (batched in memory: no Redis round trip) or charges the failure to it, then returns or
   * rethrows exactly what `fn` did.
   */
  call<T>(dependency: string, fn: () => T | Promise<T>): Promise<T>;
  /** The job's own dependency: `dependencies[job.name]`, or the job name when it has no mapping. */
  readonly dependency: string;
  /** This attempt's number as stormguard counts it (1 for the first; deferrals do not count). */
  readonly attempt: number;
  /** The job's idempotency key, when the worker was given `idempotency.key` and it returned one. */
  readonly idempotencyKey: string | undefined;
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

  constructor(
    readonly dependency: string,
    readonly attempt: number,
    readonly idempotencyKey: string | undefined,
    /** Called after each successful call: the worker records it in the budget (batched, in memory). */
    private readonly onSuccess: (dependency: string) => void,
    private readonly breaker?: CallBreaker,
    private readonly isFailure?: (error: unknown) => boolean,
    /** The attempt's trace, when an instrumentation follows it: each call gets a span of its own. */
    private readonly trace?: AttemptTrace,
  ) {}

  async call<T>(dependency: string, fn: () => T | Promise<T>): Promise<T> {
    const problem = dependencyNameProblem(dependency);
    if (problem) {
      // A bug in the processor: no retry can fix it, so it is dead-lettered (reason `permanent`) and
      // visible, before `fn` runs (so no side effect happens for a call that could not be accounted).
      throw new PermanentError(
        `ctx.call: the dependency ${problem}; name the downstream system, e.g. "search" (got ${JSON.stringify(dependency)})`,
      );
    }
    this.calls++;
    try {
      const value = this.trace
        ? await this.trace.call(dependency, async () => this.#execute(dependency, fn))
        : await this.#execute(dependency, fn);
      this.onSuccess(dependency);
      return value;
    } catch (error) {
      this.#failedCalls ??= new Map();
      this.#failedCalls.set(error, dependency);
      throw error;
    }
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
