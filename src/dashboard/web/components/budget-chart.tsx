import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { BudgetSample } from '../types.js';

const SERIES = [
  { label: 'allowance', stroke: '#4b6cb7', width: 2 },
  { label: 'spent', stroke: '#d08700', width: 2 },
  { label: 'denied', stroke: '#c0392b', width: 2 },
];

/** A dependency's budget over the last 15 minutes: allowance, retries spent, retries denied. */
export function BudgetChart({ dependency, samples }: { dependency: string; samples: BudgetSample[] }) {
  const holder = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);

  useEffect(() => {
    if (!holder.current) return;
    plot.current = new uPlot(
      {
        width: 320,
        height: 140,
        legend: { show: true, live: false },
        cursor: { show: false },
        scales: { x: { time: true } },
        axes: [{ size: 28 }, { size: 36 }],
        series: [{}, ...SERIES.map((s) => ({ ...s, points: { show: false } }))],
      },
      [[], [], [], []],
      holder.current,
    );
    return () => {
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData([
      samples.map((s) => s.atMs / 1000),
      samples.map((s) => s.allowance),
      samples.map((s) => s.spent),
      samples.map((s) => s.denied),
    ]);
  }, [samples]);

  const last = samples.at(-1);
  return (
    <figure class="chart">
      <div
        ref={holder}
        role="img"
        aria-label={`${dependency}: budget over the last 15 minutes${
          last ? `; now allowance ${last.allowance}, spent ${last.spent}, denied ${last.denied}` : ''
        }`}
      />
      <figcaption>{dependency}: last 15 minutes</figcaption>
    </figure>
  );
}
