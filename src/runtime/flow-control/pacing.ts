/**
 * Fleet-wide pacing of admitted attempts, as a generic cell rate algorithm (GCRA) with reservations: the
 * whole state is one number, the theoretical arrival time (`tatMs`) of the next free slot, so a store keeps
 * it in one field and updates it atomically (one Lua script, one SQL statement, one memory write). Pure.
 */

/**
 * A pacer's answer. Granted: the caller owns the slot starting `waitMs` from now (0: at once) and must not
 * call before it; the store keeps `tatMs`. Refused: the next slot is more than `maxWaitMs` away; nothing
 * is reserved, and `waitMs` says when to ask again.
 *
 * @example
 * const verdict: PaceVerdict = { granted: true, waitMs: 120, tatMs: 10_620 };
 */
export interface PaceVerdict {
  granted: boolean;
  /** Granted: how long to wait for the reserved slot. Refused: how long until a slot is free. */
  waitMs: number;
  /** The theoretical arrival time to store (unchanged when refused). */
  tatMs: number;
}

/**
 * One reservation at `ratePerSecond`: the slot is `max(tatMs, nowMs)`, granted when it is at most
 * `maxWaitMs` away; the next slot is one interval (1000 / rate ms) after it. An infinite rate grants at
 * once and resets the state to `nowMs`.
 *
 * @example
 * pace(0, 1_000, 2, 0); // { granted: true, waitMs: 0, tatMs: 1_500 }
 * pace(1_500, 1_000, 2, 0); // { granted: false, waitMs: 500, tatMs: 1_500 }
 * pace(1_500, 1_000, 2, 1_000); // { granted: true, waitMs: 500, tatMs: 2_000 }
 */
export function pace(tatMs: number, nowMs: number, ratePerSecond: number, maxWaitMs: number): PaceVerdict {
  if (!Number.isFinite(ratePerSecond)) return { granted: true, waitMs: 0, tatMs: nowMs };
  const slot = Math.max(tatMs, nowMs);
  const waitMs = slot - nowMs;
  if (waitMs > maxWaitMs) return { granted: false, waitMs, tatMs };
  return { granted: true, waitMs, tatMs: slot + 1_000 / ratePerSecond };
}

/**
 * Up to `max` reservations whose slots start within `horizonMs` from now: how a releaser takes a batch of
 * parked jobs every tick. Returns how many were granted and the state after them.
 *
 * @example
 * paceMany(0, 1_000, 4, 10, 1_000); // { granted: 4, tatMs: 2_000 } (slots at 1000, 1250, 1500, 1750)
 */
export function paceMany(
  tatMs: number,
  nowMs: number,
  ratePerSecond: number,
  max: number,
  horizonMs: number,
): { granted: number; tatMs: number } {
  if (!Number.isFinite(ratePerSecond)) return { granted: Math.max(0, max), tatMs: nowMs };
  let tat = tatMs;
  let granted = 0;
  while (granted < max) {
    const verdict = pace(tat, nowMs, ratePerSecond, horizonMs);
    // A slot exactly at the horizon belongs to the next tick.
    if (!verdict.granted || (verdict.waitMs >= horizonMs && horizonMs > 0)) break;
    tat = verdict.tatMs;
    granted++;
  }
  return { granted, tatMs: tat };
}
