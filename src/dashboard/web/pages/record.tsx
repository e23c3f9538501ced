import { useState } from 'preact/hooks';
import { act, get } from '../api.js';
import { delay, when } from '../components/format.js';
import { canAct } from '../components/token-box.js';
import { useData } from '../components/use-data.js';
import { href, navigate } from '../route.js';
import type { MalformedDeadLetter, StoredDeadLetter } from '../types.js';

/** One record: its data, error and attempts, with replay and delete. */
export function RecordPage({ queue, id }: { queue: string; id: string }) {
  const path = `/queues/${encodeURIComponent(queue)}/records/${encodeURIComponent(id)}`;
  const { data, error } = useData(
    () => get<{ record: StoredDeadLetter | MalformedDeadLetter; malformed: boolean }>(path),
    path,
  );
  const [outcome, setOutcome] = useState<string>();
  const [busy, setBusy] = useState(false);
  const run = (what: 'replay' | 'delete', label: string) => {
    setBusy(true);
    act<{ message: string }>(`${path}/${what}`, {})
      .then((r) => {
        setOutcome(r.message);
        if (what === 'delete') navigate(['dead-letters', queue]);
      })
      .catch((e: unknown) => setOutcome(`${label} failed: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => setBusy(false));
  };
  return (
    <section aria-labelledby="record-title">
      <p>
        <a href={href(['dead-letters', queue])}>← Dead letters of {queue}</a>
      </p>
      <h1 id="record-title">
        Record {id} of {queue}
      </h1>
      {error && <p role="alert">{error}</p>}
      {data?.malformed && (
        <p role="alert">This record does not read: {(data.record as MalformedDeadLetter).problem}</p>
      )}
      {data && !data.malformed && <Detail record={data.record as StoredDeadLetter} />}
      {data && (
        <div class="actions">
          <button
            type="button"
            disabled={busy || !canAct() || data.malformed}
            onClick={() => run('replay', 'Replay')}
          >
            Replay this job
          </button>{' '}
          <button
            type="button"
            class="danger"
            disabled={busy || !canAct()}
            onClick={() => {
              if (confirm(`Delete record ${id} for good?`)) run('delete', 'Delete');
            }}
          >
            Delete this record
          </button>
          {!canAct() && <span class="meta"> Actions need the console token.</span>}
        </div>
      )}
      {outcome && <p role="status">{outcome}</p>}
    </section>
  );
}

function Detail({ record }: { record: StoredDeadLetter }) {
  const rows: [string, string][] = [
    ['Job id', record.jobId],
    ['Name', record.name],
    ['Reason', `${record.reason}: ${record.detail}`],
    ['Dependency', record.dependency],
    ['Attempts made', String(record.attemptsMade)],
    ['Created', when(record.createdAt)],
    ['First failed', when(record.firstFailedAt)],
    ['Dead-lettered', when(record.deadLetteredAt)],
    ['Replays before', String(record.replays)],
  ];
  if (record.idempotencyKey) rows.push(['Idempotency key', record.idempotencyKey]);
  if (record.replayedFrom) rows.push(['Replayed from record', record.replayedFrom]);
  if (record.replay)
    rows.push(['Claimed by a replay', `${record.replay.jobId} at ${when(record.replay.claimedAt)}`]);
  return (
    <>
      <dl class="facts">
        {rows.map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </div>
        ))}
      </dl>
      <h2>Data</h2>
      <pre class="data" data-testid="record-data">
        {JSON.stringify(record.data, null, 2)}
      </pre>
      <h2>Last error</h2>
      <p class="error-text">
        {record.lastError.name}: {record.lastError.message} (
        {record.lastError.classification.retryable ? 'retryable' : 'not retryable'},{' '}
        {record.lastError.classification.reason})
      </p>
      {record.lastError.stack && <pre class="stack">{record.lastError.stack}</pre>}
      <h2 id="attempts-title">Attempts</h2>
      <Attempts record={record} />
    </>
  );
}

/** Every attempt the record keeps, with its decision and delay; a record filed before them says so. */
function Attempts({ record }: { record: StoredDeadLetter }) {
  const history = record.history ?? [];
  if (history.length === 0)
    return (
      <p>
        {record.attemptsMade} attempts were made; this record keeps the last error only (it was filed before
        records kept each attempt), the decision after it being “{record.reason}”.
      </p>
    );
  const shown =
    record.attemptsMade > history.length
      ? `The last ${history.length} of ${record.attemptsMade} attempts, oldest first.`
      : 'Every attempt, oldest first.';
  return (
    <table class="grid" aria-labelledby="attempts-title" aria-describedby="attempts-shown">
      <caption id="attempts-shown">{shown}</caption>
      <thead>
        <tr>
          <th scope="col">Attempt</th>
          <th scope="col">At</th>
          <th scope="col">Dependency</th>
          <th scope="col">Error</th>
          <th scope="col">Classified as</th>
          <th scope="col">Decision</th>
          <th scope="col">Delay</th>
        </tr>
      </thead>
      <tbody>
        {history.map((a) => (
          <tr key={`${a.attempt}-${a.at}`}>
            <th scope="row" data-field="attempt">
              {a.attempt}
            </th>
            <td data-field="at">{when(a.at)}</td>
            <td>{a.dependency}</td>
            <td class="error-text">
              {a.error.name}: {a.error.message}
            </td>
            <td>
              {a.classification.reason} ({a.classification.retryable ? 'retryable' : 'not retryable'})
            </td>
            <td>
              {a.decision} ({a.cause})
            </td>
            <td data-field="delay">{a.delayMs === undefined ? '–' : delay(a.delayMs)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
