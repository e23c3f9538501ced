import { DEAD_LETTER_REASONS } from '../policy/types.js';

/**
 * The value a label takes once its limit of distinct values is reached, or for a value outside its set.
 *
 * @example
 * // stormguard_successes_total{task="other"}: jobs whose names came after the first 100
 */
export const OVERFLOW_LABEL_VALUE = 'other';

/**
 * The value a label takes when the event carried none.
 *
 * @example
 * // stormguard_attempts_total{dependency="unknown"}
 */
export const MISSING_LABEL_VALUE = 'unknown';

/**
 * Keeps label cardinality bounded. Queue, task and dependency names come from configuration, but a job
 * named after its id would mint a new time series per job and take a Prometheus server down: past
 * `limit` distinct values per label, new values are reported as `other` (and `onOverflow` is told once
 * per label). Labels with a known vocabulary (reason, cause, mode, state) map anything else to `other`.
 */
export class LabelBounds {
  readonly #seen = new Map<string, Set<string>>();
  readonly #warned = new Set<string>();

  constructor(
    private readonly limit: number,
    private readonly onOverflow: (label: string, value: string) => void = () => {},
  ) {}

  /** `value` itself while `label` has seen fewer than `limit` distinct values, else `other`. */
  open(label: string, value: unknown): string {
    if (typeof value !== 'string' || value === '') return MISSING_LABEL_VALUE;
    let seen = this.#seen.get(label);
    if (!seen) {
      seen = new Set();
      this.#seen.set(label, seen);
    }
    if (seen.has(value)) return value;
    if (seen.size >= this.limit) {
      if (!this.#warned.has(label)) {
        this.#warned.add(label);
        this.onOverflow(label, value);
      }
      return OVERFLOW_LABEL_VALUE;
    }
    seen.add(value);
    return value;
  }

  /** `value` when it belongs to `allowed`, else `other`. */
  static closed(value: unknown, allowed: ReadonlySet<string>): string {
    return typeof value === 'string' && allowed.has(value) ? value : OVERFLOW_LABEL_VALUE;
  }
}

export const DEAD_LETTER_REASON_SET: ReadonlySet<string> = new Set(DEAD_LETTER_REASONS);

export const DEFERRAL_CAUSES: ReadonlySet<string> = new Set(['breaker-open', 'budget-deferred']);

export const BUDGET_MODES: ReadonlySet<string> = new Set(['enforce', 'shadow']);

export const BREAKER_STATES = ['closed', 'open', 'half-open'] as const;
export const BREAKER_STATE_SET: ReadonlySet<string> = new Set(BREAKER_STATES);
