import type { Classification, Classifier, ClassifyContext } from '../types.js';
import { field } from './fields.js';

/** How deep `causeChain` follows `error.cause`; deeper chains are cut rather than walked forever. */
const MAX_CHAIN = 8;

/**
 * One classifier made of several: the first that has an opinion wins.
 *
 * @example
 * const mine: Classifier = (e) => (e instanceof QuotaError ? { retryable: false, reason: 'quota' } : undefined);
 * const classifier = composeClassifiers(mine, classifyNetwork);
 */
export function composeClassifiers(...classifiers: readonly Classifier[]): Classifier {
  return (error: unknown, context?: ClassifyContext): Classification | undefined => {
    for (const classifier of classifiers) {
      const found = classifier(error, context);
      if (found !== undefined) return found;
    }
    return undefined;
  };
}

/**
 * The error, then what it wraps: `error.cause` (Node's `fetch` puts the socket error there) and the
 * inner errors of an `AggregateError` (Node's happy-eyeballs connect failures). Breadth-first, outermost
 * first, cycle-safe, at most 8 levels deep.
 *
 * @example
 * causeChain(new TypeError('fetch failed', { cause: socketError })); // [typeError, socketError]
 */
export function causeChain(error: unknown): unknown[] {
  const seen = new Set<unknown>();
  let level: unknown[] = [error];
  const out: unknown[] = [];
  for (let depth = 0; depth < MAX_CHAIN && level.length > 0; depth++) {
    const next: unknown[] = [];
    for (const e of level) {
      if (e === undefined || e === null || seen.has(e)) continue;
      seen.add(e);
      out.push(e);
      next.push(field(e, 'cause'));
      const inner = field(e, 'errors');
      if (Array.isArray(inner)) next.push(...inner);
    }
    level = next;
  }
  return out;
}

/**
 * Asks `classifier` about the error and, while it has no opinion, about each error it wraps
 * (see {@link causeChain}).
 *
 * @example
 * throughCauses(classifyNetwork)(new TypeError('fetch failed', { cause: resetError })); // ECONNRESET
 */
export function throughCauses(classifier: Classifier): Classifier {
  return (error, context) => {
    for (const e of causeChain(error)) {
      const found = classifier(e, context);
      if (found !== undefined) return found;
    }
    return undefined;
  };
}
