import { InvalidInputError } from '../errors/invalid-input-error.js';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/**
 * The longest duration `parseDuration` accepts: ten years. Anything longer is a typo (a stray digit, a
 * unit too many), and past it a millisecond count stops being a safe integer or a valid date offset.
 *
 * @example
 * parseDuration('3650d') === MAX_DURATION_MS; // true
 */
export const MAX_DURATION_MS = 3_650 * 86_400_000;

/**
 * Parses a human duration into milliseconds: `500ms`, `90s`, `15m`, `4h`, `1d`, compound `1h30m`, or a
 * bare number of milliseconds. Throws {@link InvalidInputError} naming the input and the accepted forms.
 *
 * @example
 * parseDuration('15m'); // 900000
 * parseDuration('1h30m'); // 5400000
 * parseDuration(250); // 250
 */
export function parseDuration(input: string | number, what = 'duration'): number {
  const tooLong = () =>
    new InvalidInputError(
      `${what}: ${JSON.stringify(input)} is longer than the longest duration, 3650d (ten years)`,
    );
  if (typeof input === 'number') {
    if (input > MAX_DURATION_MS && Number.isFinite(input)) throw tooLong();
    if (Number.isFinite(input) && input >= 0) return input;
    throw new InvalidInputError(
      `${what}: ${input} is not a duration; use a number of milliseconds >= 0 or a string like 90s, 15m, 4h`,
    );
  }
  const text = input.trim();
  if (/^\d+$/.test(text)) {
    if (Number(text) > MAX_DURATION_MS) throw tooLong();
    return Number(text);
  }
  const parts = text.match(/\d+(?:\.\d+)?(?:ms|s|m|h|d)/g);
  if (!parts || parts.join('') !== text) {
    throw new InvalidInputError(
      `${what}: "${input}" is not a duration; write it like 500ms, 90s, 15m, 4h or 1h30m`,
    );
  }
  let total = 0;
  for (const part of parts) {
    const [, amount, unit] = DURATION.exec(part) as RegExpExecArray;
    total += Number(amount) * (UNIT_MS[unit as string] as number);
  }
  if (total > MAX_DURATION_MS) throw tooLong();
  return Math.round(total);
}

/**
 * Formats milliseconds for people: `850ms`, `12.5s`, `15m`, `4h`, `1h 30m`.
 *
 * @example
 * formatDuration(90_000); // "1m 30s"
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${Number((ms / 1_000).toFixed(1))}s`;
  const units: [string, number][] = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ];
  const out: string[] = [];
  let rest = Math.round(ms / 1_000) * 1_000;
  for (const [name, size] of units) {
    const n = Math.floor(rest / size);
    if (n > 0) out.push(`${n}${name}`);
    rest -= n * size;
    if (out.length === 2) break;
  }
  return out.join(' ');
}
