import { formatDuration } from '../../common/duration.js';

/** A count with thousands separators: `171,167`. */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** A virtual time offset as a clock reading from the run's start: `0:05`, `10:05`, `1:02:03`. */
export function formatOffset(ms: number): string {
  const total = Math.round(ms / 1_000);
  const h = Math.floor(total / 3_600);
  const m = Math.floor((total % 3_600) / 60);
  const s = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

export { formatDuration };
