/**
 * The dead letters the console bench files: record `i` of a queue, 1 % of them "rare" (another reason,
 * dependency and job name), dead-lettered 1 ms apart. The fast seeders write each one in the store's own
 * layout from a template of its JSON, so `recordJsonParts` gives the JSON split where `i` goes.
 */
import type { AttemptState, DeadLetterRecord } from '../../src/runtime/contracts.js';
import { finalStateOf } from '../../src/runtime/dead-letter-store-rules.js';

/** The attempt state every bench record is filed with. */
export const FINAL_STATE: AttemptState = { attempts: 1, deferrals: 0 };

/** How long the jobs' attempt states live (past the bench's run). */
export const ATTEMPTS_TTL_MS = 6 * 3_600_000;

/** The first record's deadLetteredAt; record `i` is this + i. */
export const FIRST_AT = 1_700_000_000_000;

/** The record of index `i` (its store id is `i + 1`). */
export function record(queue: string, i: number): DeadLetterRecord {
  const rare = isRare(i);
  return {
    jobId: `doc-${i}`,
    queue,
    name: rare ? 'rare-job' : 'reindex',
    data: { docId: i },
    opts: { attempts: 5 },
    reason: rare ? 'permanent' : 'budget-exhausted',
    detail: rare ? 'the document was rejected: 400' : 'retry budget for search exhausted',
    lastError: {
      name: 'TransientError',
      message: 'timeout',
      stack:
        'TransientError: timeout\n    at SearchClient.index (/app/src/search.js:41:11)\n    at async reindex (/app/src/jobs/reindex.js:12:5)\n    at async Worker.processJob (/app/node_modules/bullmq/dist/cjs/classes/worker.js:455:28)',
      classification: { retryable: true, reason: 'ETIMEDOUT' },
    },
    attemptsMade: 1,
    dependency: rare ? 'rare-dep' : 'search',
    createdAt: i,
    deadLetteredAt: FIRST_AT + i,
    replays: 0,
  };
}

export function isRare(i: number): boolean {
  return i % 100 === 0;
}

/** The fields the stores index, of record `i`. */
export function indexedOf(i: number): { reason: string; dependency: string; name: string } {
  const r = record('q', i);
  return { reason: r.reason, dependency: r.dependency, name: r.name };
}

/** A JSON text as pieces: `parts[0] + <slots[0]> + parts[1] + …`, each slot a number of record `i`. */
export interface JsonParts {
  parts: string[];
  /** "i" the index, "id" the store id (i + 1), "at" the deadLetteredAt. */
  slots: ('i' | 'id' | 'at')[];
}

/**
 * The JSON of a record of `queue` (rare or not) as {@link JsonParts}. Checked against
 * `JSON.stringify(record(queue, i))` by the seeders' layout checks.
 */
export function recordJsonParts(queue: string, rare: boolean): JsonParts {
  const sample = record(queue, rare ? 0 : 1);
  return partsOf({
    ...sample,
    jobId: 'doc-@@i@@',
    data: { docId: '@@n:i@@' },
    createdAt: '@@n:i@@',
    deadLetteredAt: '@@n:at@@',
  });
}

/** The attempt state filed with a record of `queue` (rare or not), with its record id, as {@link JsonParts}. */
export function stateJsonParts(queue: string, rare: boolean): JsonParts {
  const sample = { ...record(queue, rare ? 0 : 1), deadLetteredAt: '@@n:at@@' as unknown as number };
  return partsOf(finalStateOf(sample, FINAL_STATE, '@@id@@'));
}

function partsOf(marked: unknown): JsonParts {
  const text = JSON.stringify(marked).replace(/"@@n:(i|at)@@"/g, '@@$1@@');
  const pieces = text.split(/@@(i|id|at)@@/);
  const out: JsonParts = { parts: [], slots: [] };
  pieces.forEach((piece, k) => {
    if (k % 2 === 0) out.parts.push(piece);
    else out.slots.push(piece as JsonParts['slots'][number]);
  });
  return out;
}

/** The JSON from its pieces, for record index `i`. */
export function fromParts(pieces: JsonParts, i: number): string {
  let out = pieces.parts[0] ?? '';
  pieces.slots.forEach((slot, k) => {
    out += String(slot === 'i' ? i : slot === 'id' ? i + 1 : FIRST_AT + i) + (pieces.parts[k + 1] ?? '');
  });
  return out;
}
