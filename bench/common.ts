/**
 * What every benchmark script shares: its command line (a size option, `--rounds`, `--json`, exit 2 on bad
 * values), the median it reports and the plain-text table it prints.
 */
import { parseArgs } from 'node:util';

/** The parsed command line of a benchmark script. */
export interface BenchArgs {
  /** The size option's value (jobs, records, operations per run). */
  size: number;
  /** How many measured rounds each figure is the median of. */
  rounds: number;
  /** Print JSON instead of a table. */
  json: boolean;
}

/**
 * Parses `--<size> N --rounds N --json` from the process arguments. A size below `min` (default 1) or a
 * `--rounds` below 1 prints one line naming the option and exits with code 2.
 *
 * @example
 * const { size: jobs, rounds, json } = benchArgs({ size: ['jobs', 3000] });
 */
export function benchArgs(spec: {
  size: [name: string, fallback: number, min?: number];
  rounds?: number;
}): BenchArgs {
  const [name, fallback, min = 1] = spec.size;
  const { values } = parseArgs({
    options: {
      [name]: { type: 'string', default: String(fallback) },
      rounds: { type: 'string', default: String(spec.rounds ?? 3) },
      json: { type: 'boolean', default: false },
    },
  });
  const size = Number(values[name]);
  const rounds = Number(values.rounds);
  if (!Number.isInteger(size) || size < min || !Number.isInteger(rounds) || rounds < 1) {
    process.stderr.write(`--${name} must be a whole number >= ${min} and --rounds one >= 1\n`);
    process.exit(2);
  }
  return { size, rounds, json: values.json === true };
}

/**
 * The median of the figures (the mean of the middle two when there is an even number of them).
 *
 * @example
 * median([3, 1, 2]); // 2
 */
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * Lays rows of cells out as a table, columns two spaces apart: the first `leftColumns` columns (default 1,
 * the labels) padded on the right, the figures after them on the left. The first row is the header.
 *
 * @example
 * formatTable([['operation', 'per s'], ['add', '1200']]);
 */
export function formatTable(rows: string[][], leftColumns = 1): string {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => (i < leftColumns ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
        .join('  '),
    )
    .join('\n');
}
