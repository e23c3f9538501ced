import { useEffect, useState } from 'preact/hooks';
import { act, get } from '../api.js';
import { count, duration, when } from '../components/format.js';
import { QueuePicker } from '../components/queue-picker.js';
import { canAct } from '../components/token-box.js';
import { href, navigate } from '../route.js';
import { REASONS, type ReplayRun } from '../types.js';

/** A dry run on a snapshot: what a replay would move. */
interface Preview {
  snapshotId: string;
  total: number;
  byReason: Record<string, number>;
  byDependency: Record<string, number>;
  ratePerSecond?: number;
  estimateMs?: number;
}

/** A replay running on the server (see src/runtime/replay-runs.ts). */
type Run = ReplayRun;

/** Bulk replay: a preview on a snapshot, then a paced run on the server that outlives this page. */
export function BulkReplayPage(props: {
  queue: string | undefined;
  runId: string | undefined;
  query: URLSearchParams;
}) {
  if (!props.queue) return <QueuePicker title="Bulk replay" to={(q) => ['replay', q]} />;
  if (props.runId) return <RunView queue={props.queue} runId={props.runId} />;
  return <Planner queue={props.queue} query={props.query} />;
}

function Planner({ queue, query }: { queue: string; query: URLSearchParams }) {
  const [filter, setFilter] = useState({
    reason: query.get('reason') ?? '',
    dependency: query.get('dependency') ?? '',
    name: query.get('name') ?? '',
    age: query.get('age') ?? '',
  });
  const [rate, setRate] = useState('10');
  const [whenHealthy, setWhenHealthy] = useState(true);
  const [preview, setPreview] = useState<Preview>();
  const [error, setError] = useState<string>();
  const base = `/queues/${encodeURIComponent(queue)}/replays`;
  const ratePerSecond = rate.trim() === '' ? undefined : Number(rate);
  const field = (name: 'dependency' | 'name' | 'age', label: string) => (
    <label>
      {label}
      <input value={filter[name]} onInput={(e) => setFilter({ ...filter, [name]: e.currentTarget.value })} />
    </label>
  );
  return (
    <section aria-labelledby="replay-title">
      <h1 id="replay-title">Bulk replay of {queue}</h1>
      <form
        class="filters"
        aria-label="What to replay"
        onSubmit={(e) => {
          e.preventDefault();
          setError(undefined);
          act<Preview>(`${base}/preview`, { filter, ratePerSecond })
            .then(setPreview)
            .catch((err: unknown) => setError(String(err)));
        }}
      >
        <label>
          Reason
          <select
            value={filter.reason}
            onChange={(e) => setFilter({ ...filter, reason: e.currentTarget.value })}
          >
            <option value="">any</option>
            {REASONS.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        {field('dependency', 'Dependency')}
        {field('name', 'Job name')}
        {field('age', 'Newer than')}
        <label>
          Jobs per second
          <input inputMode="decimal" value={rate} onInput={(e) => setRate(e.currentTarget.value)} />
        </label>
        <label class="check">
          <input
            type="checkbox"
            checked={whenHealthy}
            onChange={(e) => setWhenHealthy(e.currentTarget.checked)}
          />
          Only while the dependency is healthy
        </label>
        <button type="submit" disabled={!canAct()}>
          Preview (dry run)
        </button>
      </form>
      {!canAct() && <p class="meta">Replaying needs the console token.</p>}
      {error && <p role="alert">{error}</p>}
      {preview && (
        <section class="preview" aria-label="Preview">
          <h2>Preview</h2>
          <p data-testid="preview-total">
            {count(preview.total)} records in the snapshot
            {preview.estimateMs !== undefined
              ? `; about ${duration(preview.estimateMs)} at ${preview.ratePerSecond}/s`
              : ''}
            . Records dead-lettered after this preview are not included.
          </p>
          <Counts title="By reason" counts={preview.byReason} />
          <Counts title="By dependency" counts={preview.byDependency} />
          <button
            type="button"
            disabled={preview.total === 0}
            onClick={() =>
              act<Run>(base, { snapshotId: preview.snapshotId, ratePerSecond, whenHealthy })
                .then((run) => navigate(['replay', queue, run.id]))
                .catch((err: unknown) => setError(String(err)))
            }
          >
            Start replay of {count(preview.total)} records
          </button>
        </section>
      )}
      <Runs queue={queue} />
    </section>
  );
}

function Counts({ title, counts }: { title: string; counts: Record<string, number> }) {
  return (
    <table class="grid small" aria-label={title}>
      <caption>{title}</caption>
      <tbody>
        {Object.entries(counts).map(([k, n]) => (
          <tr key={k}>
            <th scope="row">{k}</th>
            <td>{count(n)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Runs({ queue }: { queue: string }) {
  const [runs, setRuns] = useState<Run[]>();
  useEffect(() => {
    get<{ runs: Run[] }>('/replays', { queue })
      .then((r) => setRuns(r.runs))
      .catch(() => setRuns([]));
  }, [queue]);
  if (!runs || runs.length === 0) return null;
  return (
    <>
      <h2>Replays of {queue}</h2>
      <ul>
        {runs.map((run) => (
          <li key={run.id}>
            <a href={href(['replay', queue, run.id])}>
              {run.id}: {run.status}, {count(run.moved)} of {count(run.total)} moved, started{' '}
              {when(run.startedAtMs)}
            </a>
          </li>
        ))}
      </ul>
    </>
  );
}

function RunView({ queue, runId }: { queue: string; runId: string }) {
  const [run, setRun] = useState<Run>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let stop = false;
    const poll = () =>
      get<Run>(`/replays/${encodeURIComponent(runId)}`)
        .then((r) => {
          setRun(r);
          setError(undefined);
          if (!stop && (r.status === 'running' || r.status === 'pending')) setTimeout(poll, 1_000);
        })
        .catch((e: unknown) => {
          setError(String(e));
          if (!stop) setTimeout(poll, 2_000);
        });
    void poll();
    return () => {
      stop = true;
    };
  }, [runId]);
  return (
    <section aria-labelledby="run-title">
      <p>
        <a href={href(['replay', queue])}>← Bulk replay of {queue}</a>
      </p>
      <h1 id="run-title">Replay {runId}</h1>
      {error && <p role="alert">{error}</p>}
      {run && (
        <>
          <p role="status" data-testid="run-state" data-state={run.status}>
            {run.status}
            {run.waitingFor ? ` (waiting for ${run.waitingFor} to be healthy)` : ''}: {count(run.moved)}{' '}
            moved, {count(run.skipped)} skipped, {count(run.failed)} failed of {count(run.total)}
          </p>
          <progress max={run.total} value={run.cursor} aria-label="Replay progress" />
          <p class="meta">
            Runs on the server: closing this page does not stop it. Started {when(run.startedAtMs)}
            {run.finishedAtMs ? `, finished ${when(run.finishedAtMs)}` : ''}
            {run.status === 'pending' && run.stoppedBecause
              ? `; stopped (${run.stoppedBecause}), to go on as soon as a console runs it`
              : ''}
            .
          </p>
          {run.failures.length > 0 && (
            <>
              <h2>Records that failed</h2>
              <table class="grid" aria-label="Records that failed">
                <thead>
                  <tr>
                    <th scope="col">Record</th>
                    <th scope="col">Job</th>
                    <th scope="col">Why</th>
                  </tr>
                </thead>
                <tbody>
                  {run.failures.map((f) => (
                    <tr key={f.id}>
                      <th scope="row">
                        <a href={href(['dead-letters', queue, f.id])}>{f.id}</a>
                      </th>
                      <td>{f.jobId ?? ''}</td>
                      <td class="error-text">{f.error}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
        </>
      )}
    </section>
  );
}
