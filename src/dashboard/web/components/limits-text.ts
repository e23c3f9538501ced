/** Limits in words, as the overview and the Limits page say them; every value ends up as text (Preact escapes it). */

import type { DependencyLimitStatus } from '../types.js';
import { duration } from './format.js';

/** A time of day in UTC (`14:05:07 UTC`), with the date when it is more than 12 hours away. */
export function clockTime(atMs: number, awayMs: number): string {
  const iso = new Date(atMs).toISOString();
  const time = `${iso.slice(11, 19)} UTC`;
  return awayMs < 12 * 3_600_000 ? time : `${iso.slice(0, 10)} ${time}`;
}

/** `24/25 in flight`, or `3 in flight (no cap)`. */
export function inFlightText(limits: DependencyLimitStatus): string {
  const cap = limits.effective.maxInFlight;
  return cap === undefined ? `${limits.inFlight} in flight (no cap)` : `${limits.inFlight}/${cap} in flight`;
}

/** `at most 50/s`, or `no rate limit`. */
export function rateText(limits: DependencyLimitStatus): string {
  const rate = limits.effective.maxRatePerSecond;
  return rate === undefined ? 'no rate limit' : `at most ${rate}/s`;
}

/** `held until 14:05:07 UTC by Retry-After (in 42s)`, `probing after a hold`, or nothing. */
export function holdText(limits: DependencyLimitStatus): string | undefined {
  const hold = limits.hold;
  if (hold)
    return `held until ${clockTime(hold.untilMs, hold.remainingMs)} by Retry-After (in ${duration(hold.remainingMs)})`;
  if (limits.probing) return 'probing after a hold: only probes run until one succeeds';
  return undefined;
}

/** `paused by alice: vendor incident (expires 14:30:00 UTC, in 25m 0s)`, or what the override sets. */
export function overrideText(limits: DependencyLimitStatus): string | undefined {
  const o = limits.override;
  if (!o) return undefined;
  const parts: string[] = [];
  if (o.paused) parts.push('paused');
  if (o.maxInFlight !== undefined)
    parts.push(`maxInFlight ${o.maxInFlight} (code: ${limits.declared.maxInFlight ?? 'none'})`);
  if (o.maxRatePerSecond !== undefined)
    parts.push(
      `maxRatePerSecond ${o.maxRatePerSecond} (code: ${limits.declared.maxRatePerSecond ?? 'none'})`,
    );
  const what = o.paused ? parts.join(', ') : `set ${parts.join(', ')}`;
  const until =
    o.expiresAtMs === undefined || o.expiresInMs === undefined
      ? 'until a reset'
      : `expires ${clockTime(o.expiresAtMs, o.expiresInMs)}, in ${duration(o.expiresInMs)}`;
  return `${what} by ${o.by}: ${o.reason} (${until})`;
}

/** One line for the overview: `24/25 in flight · at most 50/s · held until … · paused by …`. */
export function limitsLine(limits: DependencyLimitStatus): string {
  return [inFlightText(limits), rateText(limits), holdText(limits), overrideText(limits)]
    .filter((part) => part !== undefined)
    .join(' · ');
}
