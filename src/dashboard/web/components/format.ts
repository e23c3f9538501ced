/** Small formatting helpers; every value ends up as text (Preact escapes it). */

export function when(ms: number | undefined): string {
  if (ms === undefined) return '–';
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
}

export function ago(ms: number | undefined, now = Date.now()): string {
  if (ms === undefined) return '–';
  const s = Math.round((now - ms) / 1000);
  if (s < 0) return `in ${duration(-s * 1000)}`;
  return `${duration(s * 1000)} ago`;
}

export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${m % 60}m`;
}

/** A retry's delay: milliseconds below a second (backoffs start small), else as {@link duration}. */
export function delay(ms: number): string {
  return ms < 1_000 ? `${Math.round(ms)} ms` : duration(ms);
}

export function count(n: number | undefined): string {
  return n === undefined ? '–' : n.toLocaleString('en-US');
}
