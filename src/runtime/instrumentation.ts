import type { BreakerVerdict, BudgetVerdict, Decision } from '../policy/types.js';

/**
 * How a tracer (OpenTelemetry's, through `stormguard/opentelemetry`) follows the job runtime without the
 * runtime knowing it: once per attempt the runtime asks for an {@link AttemptTrace}, and tells it what the
 * attempt did. An instrumentation that returns `undefined` (no tracer provider registered, say) costs the
 * attempt one call and nothing else.
 *
 * @example
 * const instrumentation: JobInstrumentation = {
 *   startAttempt: (a) => (a.attempt > 1 ? myTrace(a) : undefined), // trace retries only
 * };
 * createWorker('index', processor, { connection, policy: 'idempotent-internal', instrumentation });
 */
export interface JobInstrumentation {
  /**
   * False when nothing would be traced now (no tracer provider registered): the runtime then skips the
   * attempt without building its {@link AttemptStart}. Absent: always asked through `startAttempt`.
   */
  isActive?(): boolean;
  startAttempt(attempt: AttemptStart): AttemptTrace | undefined;
  /**
   * The tracer's error redaction (`openTelemetryTracing({ redactError })`): when the dead-letter store has
   * no `redact` hook, the runtime redacts with it every error it hands the queue (a failed or dead-lettered
   * job's failed reason and stack), its logs and its events. A hook that throws leaves the error's class.
   */
  redactError?(error: { name: string; message: string; stack?: string }): {
    name: string;
    message: string;
    stack?: string;
  };
}

/**
 * What the runtime knows when an attempt starts.
 *
 * @example
 * const start: AttemptStart = { queue: 'index', task: 'reindex', jobId: '42', dependency: 'search', attempt: 2,
 *   replays: 0, earlierAttempts: ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'], replayedAttempts: [] };
 */
export interface AttemptStart {
  queue: string;
  /** The job name. */
  task: string;
  jobId: string;
  /** The job's own dependency (a failure in a `ctx.call` may be charged to another; see `decided`). */
  dependency: string;
  /** This attempt's number as stormguard counts it (1 for the first; deferrals do not count). */
  attempt: number;
  /** How many replays the job's lineage went through. */
  replays: number;
  /** The {@link AttemptTrace.carrier}s of this job's earlier attempts, oldest first (at most {@link MAX_TRACE_LINKS}). */
  earlierAttempts: readonly string[];
  /** The carriers of the attempts of the job this one was replayed from (its dead-letter record kept them). */
  replayedAttempts: readonly string[];
  /** The dead-letter record this job was replayed from, when it was. */
  replayedFrom?: string;
}

/**
 * One attempt as an instrumentation follows it. The runtime calls `run` around the processor, `call` around
 * each `ctx.call`, `budgetAnswered` / `breakerAnswered` while it decides, `decided` with the decision, and
 * `end` exactly once with what the attempt came to. None of them may throw (a throw is reported and the
 * attempt goes on as if untraced).
 *
 * @example
 * const attempt: AttemptTrace = {
 *   carrier: undefined, // keep nothing with the job
 *   run: (fn) => fn(),
 *   call: (dependency, fn) => timed(dependency, fn),
 *   budgetAnswered: () => {},
 *   breakerAnswered: () => {},
 *   decided: (decision, dependency) => log.info(`${dependency}: ${decision.action}`),
 *   end: () => {},
 * };
 */
export interface AttemptTrace {
  /** Runs the processor (the whole attempt's work) with this attempt as the current trace context. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** Runs one `ctx.call` (breaker check included) with a trace of its own, named after `dependency`. */
  call<T>(dependency: string, fn: () => Promise<T>): Promise<T>;
  /** The retry budget's answer for `dependency` while deciding (a `RetryBudget` answers a full snapshot). */
  budgetAnswered(dependency: string, verdict: BudgetVerdict): void;
  /** The breaker's state for `dependency` while deciding. */
  breakerAnswered(dependency: string, verdict: BreakerVerdict): void;
  /** A failed attempt was decided: `error` failed it, `dependency` is the one it was charged to. */
  decided(decision: Decision, dependency: string, error: unknown): void;
  /** The attempt is over. */
  end(outcome: AttemptOutcome): void;
  /**
   * This attempt's trace context as a string (a W3C `traceparent`), kept in the job's attempt state and in
   * its dead-letter record so later attempts, and a replay, can link to it; `undefined` keeps nothing.
   */
  readonly carrier: string | undefined;
}

/**
 * What an attempt came to, as {@link AttemptTrace.end} hears it.
 *
 * - `completed`, `delayed` (a retry or deferral is scheduled), `dead-lettered` (with the record's id),
 *   `failed` (a terminal decision with nowhere to file it), `pass-through` (a queue control error).
 * - `bookkeeping`: a store refused the attempt's bookkeeping; the job runs again later, uncharged.
 *
 * @example
 * const outcome: AttemptOutcome = { type: 'dead-lettered', recordId: '17' };
 */
export type AttemptOutcome =
  | { type: 'completed' }
  | { type: 'delayed' }
  | { type: 'dead-lettered'; recordId: string }
  | { type: 'failed' }
  | { type: 'pass-through' }
  | { type: 'bookkeeping'; error: unknown };

/**
 * Carriers a job keeps: the first attempt's and the latest ones, so a job retried for days still links to
 * where it started without its attempt state growing.
 *
 * @example
 * keepTraceLinks(['a'], 'b'); // ['a', 'b']
 */
export const MAX_TRACE_LINKS = 16;

/**
 * The job's carriers after this attempt: `earlier` plus `carrier`, the first one and the latest kept when
 * there are more than {@link MAX_TRACE_LINKS}. `undefined` when there is none to keep.
 *
 * @example
 * keepTraceLinks(undefined, undefined); // undefined
 * keepTraceLinks(['00-…-01'], '00-…-01'); // both
 */
export function keepTraceLinks(
  earlier: readonly string[] | undefined,
  carrier: string | undefined,
): string[] | undefined {
  if (carrier === undefined) return earlier && earlier.length > 0 ? [...earlier] : undefined;
  const all = earlier ? [...earlier, carrier] : [carrier];
  if (all.length <= MAX_TRACE_LINKS) return all;
  return [all[0] as string, ...all.slice(all.length - (MAX_TRACE_LINKS - 1))];
}
