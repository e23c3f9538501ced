import type { Instruments } from './instruments.js';
import type { LabelBounds } from './labels.js';
import type { ScrapeCoordinator } from './scrape.js';

/** What every observer shares: the instruments, the label guard, the scrape pass and its time bound. */
export interface ObserverContext {
  readonly instruments: Instruments;
  readonly bounds: LabelBounds;
  readonly scrape: ScrapeCoordinator;
  /** How long one scrape-time read may take before its figures are left out. */
  readonly readTimeoutMs: number;
  /** Told about scrape-time reads that failed (the scrape itself still answers). */
  readonly onError: (error: unknown) => void;
  /**
   * Dependencies any observer has seen (worker events, budget, breaker): scrape-time reads cover them
   * all, so a worker that has only seen successes still reports its dependency's budget and breaker.
   */
  readonly dependencies: Set<string>;
  /**
   * Event sources whose `replayed` events are counted, with how many observations share the one
   * subscription: a `DeadLetterQueue` may be passed both to `observeWorker` and to `observeDeadLetters`,
   * and each replay must count once for as long as either observation lives.
   */
  readonly replaySources: Map<object, { users: number; dispose(): void }>;
}

/** Adds `dependency` to the shared set unless its label has been bounded to something else. */
export function noteDependency(ctx: ObserverContext, dependency: string | undefined): string {
  const label = ctx.bounds.open('dependency', dependency);
  if (label === dependency) ctx.dependencies.add(dependency);
  return label;
}
