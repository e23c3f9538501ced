import { InvalidInputError } from '../errors/invalid-input-error.js';

/**
 * Where a listing stopped: the last entry's dead-letter time and record id. Every store orders records by
 * (deadLetteredAt, numeric id), so a cursor means the same in each, and stays valid when the entry it
 * names is removed meanwhile (a replay removes what it lists).
 */
export interface ListPosition {
  at: number;
  seq: number;
}

/**
 * The opaque cursor text of a position.
 *
 * @example
 * encodeCursor({ at: 1_700_000_000_000, seq: 17 }); // '1700000000000_17'
 */
export function encodeCursor(position: ListPosition): string {
  return `${position.at}_${position.seq}`;
}

/**
 * Reads a cursor back; bad input (a cursor from nowhere) is an {@link InvalidInputError}.
 *
 * @example
 * decodeCursor('1700000000000_17'); // { at: 1700000000000, seq: 17 }
 */
export function decodeCursor(cursor: string): ListPosition {
  const match = /^(\d+(?:\.\d+)?)_(\d+)$/.exec(cursor);
  if (!match)
    throw new InvalidInputError(
      `dead-letter cursor: "${cursor}" is not a cursor; pass the \`next\` of the previous page as it is`,
    );
  return { at: Number(match[1]), seq: Number(match[2]) };
}

/**
 * Orders two positions: by time, then by id.
 *
 * @example
 * [b, a].sort(comparePositions);
 */
export function comparePositions(a: ListPosition, b: ListPosition): number {
  return a.at - b.at || a.seq - b.seq;
}
