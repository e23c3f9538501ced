import { useEffect, useState } from 'preact/hooks';
import { EVENTS_URL, get } from '../api.js';
import type { BudgetSample, OverviewSnapshot } from '../types.js';

const HISTORY_MS = 15 * 60_000;

type History = Record<string, BudgetSample[]>;

/** The overview, live: the first read with its history, then every update the server pushes (SSE). */
export function useOverview() {
  const [snapshot, setSnapshot] = useState<OverviewSnapshot | undefined>(undefined);
  const [history, setHistory] = useState<History>({});
  const [connected, setConnected] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);

  useEffect(() => {
    let closed = false;
    get<OverviewSnapshot & { history: History }>('/overview')
      .then(({ history: past, ...first }) => {
        if (closed) return;
        setHistory(past);
        setSnapshot((s) => (s && s.atMs > first.atMs ? s : first));
      })
      .catch((e: unknown) => setError(String(e)));
    const events = new EventSource(EVENTS_URL);
    events.onopen = () => setConnected(true);
    events.onerror = () => setConnected(false);
    events.addEventListener('overview', (event) => {
      const next = JSON.parse((event as MessageEvent<string>).data) as OverviewSnapshot;
      setError(undefined);
      setSnapshot(next);
      setHistory((past) => appendSamples(past, next));
    });
    events.addEventListener('feed-error', (event) => {
      setError((JSON.parse((event as MessageEvent<string>).data) as { error: string }).error);
    });
    return () => {
      closed = true;
      events.close();
    };
  }, []);
  return { snapshot, history, connected, error };
}

function appendSamples(past: History, snapshot: OverviewSnapshot): History {
  const out: History = {};
  const cutoff = snapshot.atMs - HISTORY_MS;
  for (const dep of snapshot.dependencies) {
    const series = (past[dep.dependency] ?? []).filter((s) => s.atMs >= cutoff && s.atMs < snapshot.atMs);
    if (dep.budget) {
      const { allowance, spent, denied, successes } = dep.budget;
      series.push({ atMs: snapshot.atMs, allowance, spent, denied, successes });
    }
    out[dep.dependency] = series;
  }
  return out;
}
