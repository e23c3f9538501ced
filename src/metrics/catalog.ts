/**
 * Every metric stormguard exports, as data: name (without the prefix), type, help, labels and the
 * OpenTelemetry name and unit. The Prometheus exporter and the OpenTelemetry meter build their instruments
 * from this one list, the table in docs/operations.md is written from it, and the
 * consistency test checks the rules file and the dashboard against it.
 */

/**
 * The prefix every metric name starts with unless `createMetrics({ prefix })` says otherwise. The shipped
 * rules and dashboard assume it.
 *
 * @example
 * `${DEFAULT_PREFIX}retries_total`; // 'stormguard_retries_total'
 */
export const DEFAULT_PREFIX = 'stormguard_';

/**
 * Default buckets of `stormguard_retry_delay_seconds`: 100 ms to one hour.
 *
 * @example
 * createMetrics({ retryDelayBuckets: [...RETRY_DELAY_BUCKETS_SECONDS, 7200] });
 */
export const RETRY_DELAY_BUCKETS_SECONDS: readonly number[] = [
  0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
];

/**
 * Buckets of `stormguard_job_attempts` (attempts a completed job needed).
 *
 * @example
 * JOB_ATTEMPT_BUCKETS[0]; // 1: completed on the first attempt
 */
export const JOB_ATTEMPT_BUCKETS: readonly number[] = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20];

/** The kind of instrument a metric uses (prom-client's and OpenTelemetry's have one of each). */
export type MetricType = 'counter' | 'gauge' | 'histogram';

/**
 * One entry of {@link METRICS}.
 *
 * @example
 * const def: MetricDefinition = METRICS.retries; // { name: 'retries_total', type: 'counter', ... }
 */
export interface MetricDefinition {
  /** Name without the prefix. */
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  readonly labels: readonly string[];
  /**
   * `events`: counted from events in this process. `scrape`: set while the registry is read (from the
   * store, a queue, or the outcome of those reads).
   */
  readonly source: 'events' | 'scrape';
  /**
   * The same metric through an OpenTelemetry meter: its name by OpenTelemetry's rules (dot-separated
   * namespaces, no unit or `_total` in the name) and its UCUM unit. Exported to Prometheus by an OpenTelemetry
   * collector, it gets the Prometheus name back ({@link prometheusNameOf}).
   */
  readonly otel: { readonly name: string; readonly unit: string };
}

const JOB = ['queue', 'task', 'dependency'] as const;

/**
 * The catalogue of stormguard's metrics, keyed by a short name. Read it to build documentation or checks of
 * your own (the table in docs/operations.md and the consistency test come from it).
 *
 * @example
 * for (const m of Object.values(METRICS)) console.log(`stormguard_${m.name}`, m.type, m.labels.join(','));
 */
export const METRICS = {
  attempts: {
    name: 'attempts_total',
    otel: { name: 'stormguard.attempts', unit: '{attempt}' },
    type: 'counter',
    help: "Attempts started (one execution of a job); dependency is the job's own (its mapping, or its name).",
    labels: JOB,
    source: 'events',
  },
  successes: {
    name: 'successes_total',
    otel: { name: 'stormguard.successes', unit: '{call}' },
    type: 'counter',
    help: 'Successful downstream calls (or whole jobs without ctx.call), per dependency.',
    labels: JOB,
    source: 'events',
  },
  retries: {
    name: 'retries_total',
    otel: { name: 'stormguard.retries', unit: '{retry}' },
    type: 'counter',
    help: 'Retries scheduled that use up an attempt. Budget denials and deferrals are never counted here.',
    labels: JOB,
    source: 'events',
  },
  deferrals: {
    name: 'deferrals_total',
    otel: { name: 'stormguard.deferrals', unit: '{deferral}' },
    type: 'counter',
    help: 'Jobs rescheduled without using an attempt (open breaker, budget deferral), by cause.',
    labels: [...JOB, 'cause'],
    source: 'events',
  },
  retryDelay: {
    name: 'retry_delay_seconds',
    otel: { name: 'stormguard.retry.delay', unit: 's' },
    type: 'histogram',
    help: 'Delay before each scheduled retry, in seconds.',
    labels: JOB,
    source: 'events',
  },
  deadLetters: {
    name: 'dead_letters_total',
    otel: { name: 'stormguard.dead_letters', unit: '{job}' },
    type: 'counter',
    help: 'Jobs moved to the dead-letter queue, by reason.',
    labels: [...JOB, 'reason'],
    source: 'events',
  },
  deadLettersEvicted: {
    name: 'dead_letters_evicted_total',
    otel: { name: 'stormguard.dead_letters.evicted', unit: '{record}' },
    type: 'counter',
    help: "Dead-letter records retention evicted (maxAgeMs, maxCount) when another record was filed, by the evicted record's reason.",
    labels: ['queue', 'reason'],
    source: 'events',
  },
  jobsUnfiled: {
    name: 'jobs_unfiled_total',
    otel: { name: 'stormguard.jobs.unfiled', unit: '{job}' },
    type: 'counter',
    help: "Jobs whose outcome stormguard could not record (their dead letter, safe form included, refused): failed in the queue's own failed set, by the dead-letter reason they had (bookkeeping: a retry).",
    labels: [...JOB, 'reason'],
    source: 'events',
  },
  completed: {
    name: 'jobs_completed_total',
    otel: { name: 'stormguard.jobs.completed', unit: '{job}' },
    type: 'counter',
    help: 'Jobs that ended completed.',
    labels: JOB,
    source: 'events',
  },
  jobAttempts: {
    name: 'job_attempts',
    otel: { name: 'stormguard.job.attempts', unit: '{attempt}' },
    type: 'histogram',
    help: 'Attempts a completed job needed (1 = no retry): retries that hide a struggling dependency show here.',
    labels: JOB,
    source: 'events',
  },
  replays: {
    name: 'replays_total',
    otel: { name: 'stormguard.replays', unit: '{job}' },
    type: 'counter',
    help: 'Dead-lettered jobs put back on their queue, by the reason they were dead-lettered.',
    labels: ['queue', 'task', 'reason'],
    source: 'events',
  },
  autoReplaySkipped: {
    name: 'auto_replay_skipped_total',
    otel: { name: 'stormguard.auto_replay.skipped', unit: '{record}' },
    type: 'counter',
    help: 'Dead letters automatic replay left where they are because their lineage went round autoReplay.maxReplays times (each worker counts a record once).',
    labels: ['queue', 'reason'],
    source: 'events',
  },
  writeConflicts: {
    name: 'write_conflicts_total',
    otel: { name: 'stormguard.write_conflicts', unit: '{write}' },
    type: 'counter',
    help: 'Writes of the queue engine its server rolled back for a transaction conflict (BullMQ on PostgreSQL: a deadlock between workers), by write (completion, failure, fetch) and outcome (written-again, or gave-up once the tries ran out).',
    labels: ['queue', 'write', 'outcome'],
    source: 'events',
  },
  budgetGrants: {
    name: 'budget_grants_total',
    otel: { name: 'stormguard.budget.grants', unit: '{retry}' },
    type: 'counter',
    help: 'Retries the retry budget granted in this process.',
    labels: ['dependency'],
    source: 'events',
  },
  budgetDenials: {
    name: 'budget_denials_total',
    otel: { name: 'stormguard.budget.denials', unit: '{retry}' },
    type: 'counter',
    help: 'Retries the retry budget refused in this process (mode="shadow": refusals it would have made).',
    labels: ['dependency', 'mode'],
    source: 'events',
  },
  budgetStoreOutages: {
    name: 'budget_store_outages_total',
    otel: { name: 'stormguard.budget.store_outages', unit: '{outage}' },
    type: 'counter',
    help: 'Times the budget store became unreachable and the budget fell back to its degraded mode.',
    labels: [],
    source: 'events',
  },
  budgetStateErrors: {
    name: 'budget_state_errors_total',
    otel: { name: 'stormguard.budget.state_errors', unit: '{error}' },
    type: 'counter',
    help: 'Scrape-time reads of the budget state that failed or timed out.',
    labels: [],
    source: 'scrape',
  },
  budgetAllowance: {
    name: 'budget_allowance',
    otel: { name: 'stormguard.budget.allowance', unit: '{retry}' },
    type: 'gauge',
    help: "Retries the dependency's budget allows in the current window, fleet-wide.",
    labels: ['dependency'],
    source: 'scrape',
  },
  budgetSpent: {
    name: 'budget_spent',
    otel: { name: 'stormguard.budget.spent', unit: '{retry}' },
    type: 'gauge',
    help: 'Retries granted in the current window, fleet-wide.',
    labels: ['dependency'],
    source: 'scrape',
  },
  budgetDenied: {
    name: 'budget_denied',
    otel: { name: 'stormguard.budget.denied', unit: '{retry}' },
    type: 'gauge',
    help: 'Retries refused in the current window, fleet-wide (never counted as spent).',
    labels: ['dependency'],
    source: 'scrape',
  },
  budgetSuccesses: {
    name: 'budget_successes',
    otel: { name: 'stormguard.budget.successes', unit: '{call}' },
    type: 'gauge',
    help: 'Successes recorded in the current window, fleet-wide.',
    labels: ['dependency'],
    source: 'scrape',
  },
  budgetWindow: {
    name: 'budget_window_seconds',
    otel: { name: 'stormguard.budget.window', unit: 's' },
    type: 'gauge',
    help: "Length of the budget's sliding window, in seconds.",
    labels: ['dependency'],
    source: 'scrape',
  },
  budgetRatio: {
    name: 'budget_ratio',
    otel: { name: 'stormguard.budget.ratio', unit: '1' },
    type: 'gauge',
    help: "The budget's configured ratio: retries may be at most this share of successes.",
    labels: ['dependency'],
    source: 'scrape',
  },
  budgetMinAllowance: {
    name: 'budget_min_allowance',
    otel: { name: 'stormguard.budget.min_allowance', unit: '{retry}' },
    type: 'gauge',
    help: 'Retries the budget allows per window whatever the successes (the floor).',
    labels: ['dependency'],
    source: 'scrape',
  },
  budgetDegraded: {
    name: 'budget_degraded',
    otel: { name: 'stormguard.budget.degraded', unit: '1' },
    type: 'gauge',
    help: '1 while the budget store is unreachable (a local fallback answers) or its state cannot be read.',
    labels: ['dependency'],
    source: 'scrape',
  },
  breakerState: {
    name: 'breaker_state',
    otel: { name: 'stormguard.breaker.state', unit: '1' },
    type: 'gauge',
    help: "1 for the breaker's current state (closed, open, half-open), 0 for the others; fleet-wide.",
    labels: ['dependency', 'state'],
    source: 'scrape',
  },
  breakerRejections: {
    name: 'breaker_rejections_total',
    otel: { name: 'stormguard.breaker.rejections', unit: '{call}' },
    type: 'counter',
    help: 'Calls the breaker refused in this process (open, or half-open with every probe slot taken).',
    labels: ['dependency', 'state'],
    source: 'events',
  },
  breakerTransitions: {
    name: 'breaker_transitions_total',
    otel: { name: 'stormguard.breaker.transitions', unit: '{transition}' },
    type: 'counter',
    help: 'Breaker state changes seen by this process.',
    labels: ['dependency', 'from', 'to'],
    source: 'events',
  },
  deadLetterDepth: {
    name: 'dead_letter_queue_depth',
    otel: { name: 'stormguard.dead_letter_queue.depth', unit: '{job}' },
    type: 'gauge',
    help: 'Jobs waiting in the dead-letter queue of a source queue.',
    labels: ['queue'],
    source: 'scrape',
  },
  flowPaused: {
    name: 'flow_paused',
    otel: { name: 'stormguard.flow.paused', unit: '{worker}' },
    type: 'gauge',
    help: "1 while this process's worker of the queue holds it paused for the dependency (flow control); summed over the fleet, the paused workers.",
    labels: ['queue', 'dependency'],
    source: 'scrape',
  },
  flowParked: {
    name: 'flow_parked_jobs',
    otel: { name: 'stormguard.flow.parked_jobs', unit: '{job}' },
    type: 'gauge',
    help: "Jobs of the queue parked for the dependency while it is down, fleet-wide (its park list's length).",
    labels: ['queue', 'dependency'],
    source: 'scrape',
  },
  flowControlEnabled: {
    name: 'flow_control_enabled',
    otel: { name: 'stormguard.flow.control_enabled', unit: '1' },
    type: 'gauge',
    help: '1 while flow control is on fleet-wide, 0 while its kill switch is set (`stormguard flow off`; `stormguard flow on` clears it).',
    labels: [],
    source: 'scrape',
  },
  flowDependencyDown: {
    name: 'flow_dependency_down',
    otel: { name: 'stormguard.flow.dependency_down', unit: '1' },
    type: 'gauge',
    help: '1 while flow control marks the dependency down (a worker saw it unhealthy and none has seen it recover), 0 otherwise; fleet-wide.',
    labels: ['dependency'],
    source: 'scrape',
  },
  flowHolds: {
    name: 'flow_holds_total',
    otel: { name: 'stormguard.flow.holds', unit: '{job}' },
    type: 'counter',
    help: 'Jobs flow control held in this process (kind: pause or park); mode="shadow": holds it would have made.',
    labels: ['queue', 'dependency', 'kind', 'mode'],
    source: 'events',
  },
  limitInFlight: {
    name: 'limit_in_flight',
    otel: { name: 'stormguard.limit.in_flight', unit: '{call}' },
    type: 'gauge',
    help: 'Calls to the dependency in flight fleet-wide, in cost units (its live leases); compare with stormguard_limit_max_in_flight.',
    labels: ['dependency'],
    source: 'scrape',
  },
  limitMaxInFlight: {
    name: 'limit_max_in_flight',
    otel: { name: 'stormguard.limit.max_in_flight', unit: '{call}' },
    type: 'gauge',
    help: "The dependency's effective maxInFlight, fleet-wide (an operator's override, else the lowest the workers' code declares); absent when it has none.",
    labels: ['dependency'],
    source: 'scrape',
  },
  limitMaxRate: {
    name: 'limit_max_rate_per_second',
    otel: { name: 'stormguard.limit.max_rate_per_second', unit: '{call}/s' },
    type: 'gauge',
    help: "The dependency's effective maxRatePerSecond, fleet-wide (an operator's override, else the lowest the workers' code declares); absent when it has none.",
    labels: ['dependency'],
    source: 'scrape',
  },
  limitHeld: {
    name: 'limit_held',
    otel: { name: 'stormguard.limit.held', unit: '1' },
    type: 'gauge',
    help: '1 while a Retry-After hold stops every call to the dependency fleet-wide, 0 otherwise.',
    labels: ['dependency'],
    source: 'scrape',
  },
  limitHoldRemaining: {
    name: 'limit_hold_remaining_seconds',
    otel: { name: 'stormguard.limit.hold_remaining', unit: 's' },
    type: 'gauge',
    help: "Seconds left of the dependency's Retry-After hold (0 when it is not held).",
    labels: ['dependency'],
    source: 'scrape',
  },
  limitPaused: {
    name: 'limit_paused',
    otel: { name: 'stormguard.limit.paused', unit: '1' },
    type: 'gauge',
    help: '1 while an operator has paused the dependency fleet-wide (`stormguard limits pause`; `limits resume` lifts it), 0 otherwise.',
    labels: ['dependency'],
    source: 'scrape',
  },
  limitWaits: {
    name: 'limit_waits_total',
    otel: { name: 'stormguard.limit.waits', unit: '{wait}' },
    type: 'counter',
    help: 'Calls or jobs of this process that met a limit of the dependency, by the first refusal (by: paused, hold, in-flight, rate) and the outcome (granted after waiting, or held without using an attempt).',
    labels: ['queue', 'dependency', 'by', 'outcome'],
    source: 'events',
  },
  limitWaiting: {
    name: 'limit_waiting',
    otel: { name: 'stormguard.limit.waiting', unit: '{call}' },
    type: 'gauge',
    help: "Calls (and jobs before they start) this process's worker of the queue keeps waiting for a slot of the dependency's limits now; summed over the fleet, every waiting call.",
    labels: ['queue', 'dependency'],
    source: 'scrape',
  },
  limitHolds: {
    name: 'limit_holds_total',
    otel: { name: 'stormguard.limit.holds', unit: '{hold}' },
    type: 'counter',
    help: 'Fleet-wide holds this process recorded on the dependency after a 429 or 503 with Retry-After (capped="true": the server asked for longer than retryAfter.maxMs).',
    labels: ['queue', 'dependency', 'reason', 'capped'],
    source: 'events',
  },
} as const satisfies Record<string, MetricDefinition>;

/** A key of {@link METRICS}. */
export type MetricKey = keyof typeof METRICS;

/**
 * Full metric names (with `prefix`, default `stormguard_`) in catalogue order.
 *
 * @example
 * metricNames().includes('stormguard_budget_denials_total'); // true
 */
export function metricNames(prefix = DEFAULT_PREFIX): string[] {
  return Object.values(METRICS).map((m) => `${prefix}${m.name}`);
}

/**
 * The Prometheus name an OpenTelemetry metric gets from OpenTelemetry's Prometheus translation: dots become
 * underscores, the unit `s` adds `_seconds`, a counter adds `_total` (annotation units such as `{retry}` and
 * the unit `1` add nothing). For every catalogue entry it is `stormguard_<name>`: the two exports cannot drift.
 *
 * @example
 * prometheusNameOf(METRICS.retryDelay); // 'stormguard_retry_delay_seconds'
 */
export function prometheusNameOf(def: Pick<MetricDefinition, 'type' | 'otel'>): string {
  const unit = def.otel.unit === 's' ? '_seconds' : '';
  return `${def.otel.name.replace(/\./g, '_')}${unit}${def.type === 'counter' ? '_total' : ''}`;
}
