import asciichart from 'asciichart';
import type { SimulationResult } from '../results.js';
import { formatCount, formatOffset } from './numbers.js';

const COLORS = [
  asciichart.red,
  asciichart.yellow,
  asciichart.green,
  asciichart.cyan,
  asciichart.magenta,
  asciichart.blue,
];

/** Options of {@link formatRetryChart}. */
export interface RetryChartOptions {
  /** Columns for the plot itself (the axis labels take about 12 more). Default 72. */
  width?: number;
  /** Rows. Default 12. */
  height?: number;
  /** ANSI colours, one per strategy (for a terminal). Default false. */
  color?: boolean;
}

/**
 * A terminal chart of retries per second over the run, one line per strategy, summed over dependencies.
 * Each column covers several seconds and shows the busiest of them, so bursts stay visible.
 *
 * @example
 * process.stdout.write(formatRetryChart(result, { color: process.stdout.isTTY }));
 */
export function formatRetryChart(result: SimulationResult, options: RetryChartOptions = {}): string {
  const width = Math.max(10, options.width ?? 72);
  const height = Math.max(3, options.height ?? 12);
  const seconds = result.seconds;
  const perColumn = Math.max(1, Math.ceil(seconds / width));
  const columns = Math.ceil(seconds / perColumn);
  const series = result.strategies.map((s) => {
    const out = new Array<number>(columns).fill(0);
    const total = new Array<number>(seconds).fill(0);
    for (const d of Object.values(s.timeline))
      for (let i = 0; i < seconds; i++) total[i]! += d.retries[i] ?? 0;
    for (let i = 0; i < seconds; i++) {
      const c = Math.floor(i / perColumn);
      out[c] = Math.max(out[c] as number, total[i] as number);
    }
    return out;
  });
  const labelWidth = 9;
  const axis = timeAxis(columns, perColumn * 1_000, labelWidth + 2);
  const title = 'retries/s over time (busiest second in each column)';
  if (options.color) {
    const plot = asciichart.plot(series, {
      height,
      min: 0,
      format: (x) => formatCount(x).padStart(labelWidth),
      colors: result.strategies.map((_, i) => COLORS[i % COLORS.length]),
    });
    const legend = result.strategies
      .map((s, i) => `${COLORS[i % COLORS.length]}━━${asciichart.reset} ${s.label}`)
      .join('   ');
    return `${title}\n${plot}\n${axis}\n${legend}\n`;
  }
  // Without colour, lines in one plot cannot be told apart: one small plot per strategy, on one scale.
  const max = Math.max(1, ...series.flat());
  const small = Math.max(3, Math.round(height / 2));
  const parts = result.strategies.map((s, i) => {
    const plot = asciichart.plot(series[i] as number[], {
      height: small,
      min: 0,
      max,
      format: (x) => formatCount(x).padStart(labelWidth),
    });
    return `${s.label}\n${plot}`;
  });
  return `${title}\n${parts.join('\n')}\n${axis}\n`;
}

const NICE_STEPS_S = [10, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 14_400, 43_200, 86_400];

/** Tick labels under the plot: the run's clock at round times, about every 12 columns. */
function timeAxis(columns: number, msPerColumn: number, indent: number): string {
  const line = new Array<string>(indent + columns + 8).fill(' ');
  const stepMs = (NICE_STEPS_S.find((s) => s * 1_000 >= msPerColumn * 12) ?? 86_400) * 1_000;
  for (let ms = 0; ms <= columns * msPerColumn; ms += stepMs) {
    const c = Math.round(ms / msPerColumn);
    const label = formatOffset(ms);
    if (indent + c + label.length > line.length) break;
    for (let i = 0; i < label.length; i++) line[indent + c + i] = label[i] as string;
  }
  return line.join('').trimEnd();
}
