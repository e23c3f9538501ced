import { useEffect, useState } from 'preact/hooks';
import { get } from '../api.js';
import { count, when } from '../components/format.js';
import { QueuePicker } from '../components/queue-picker.js';
import { useData } from '../components/use-data.js';
import { href, navigate } from '../route.js';
import { type DeadLetterSearchResult, REASONS, type StoredDeadLetter } from '../types.js';

interface Page {
  records: StoredDeadLetter[];
  malformed: { id: string; problem: string }[];
  next?: string;
  matching?: number;
}

const FILTERS = ['reason', 'dependency', 'name', 'age'] as const;

/** A queue's dead letters: filters served from the store's indexes, text search, pages. */
export function DeadLettersPage({ queue, query }: { queue: string | undefined; query: URLSearchParams }) {
  if (!queue) return <QueuePicker title="Dead letters" to={(q) => ['dead-letters', q]} />;
  const filter = Object.fromEntries(FILTERS.map((k) => [k, query.get(k) ?? ''])) as Record<
    (typeof FILTERS)[number],
    string
  >;
  const search = query.get('q') ?? '';
  return (
    <section aria-labelledby="dl-title">
      <h1 id="dl-title">Dead letters of {queue}</h1>
      <FilterForm queue={queue} filter={filter} search={search} />
      <p>
        <a href={href(['replay', queue], filter)}>Bulk replay these records…</a>
      </p>
      {search ? (
        <SearchResults queue={queue} filter={filter} text={search} key={query.toString()} />
      ) : (
        <RecordPages queue={queue} filter={filter} key={query.toString()} />
      )}
    </section>
  );
}

function FilterForm(props: { queue: string; filter: Record<string, string>; search: string }) {
  const [filter, setFilter] = useState(props.filter);
  const [search, setSearch] = useState(props.search);
  const field = (name: 'dependency' | 'name' | 'age', label: string, hint: string) => (
    <label>
      {label}
      <input
        name={name}
        value={filter[name]}
        placeholder={hint}
        onInput={(e) => setFilter({ ...filter, [name]: e.currentTarget.value })}
      />
    </label>
  );
  return (
    <form
      class="filters"
      aria-label="Filter and search"
      onSubmit={(e) => {
        e.preventDefault();
        navigate(['dead-letters', props.queue], { ...filter, q: search.trim() });
      }}
    >
      <label>
        Reason
        <select
          name="reason"
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
      {field('dependency', 'Dependency', 'any')}
      {field('name', 'Job name', 'any')}
      {field('age', 'Newer than', 'e.g. 1h')}
      <label>
        Search id, name, error
        <input name="q" type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
      </label>
      <button type="submit">Apply</button>
    </form>
  );
}

function RecordPages({ queue, filter }: { queue: string; filter: Record<string, string> }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const { data, error, loading } = useData(
    () => get<Page>(`/queues/${encodeURIComponent(queue)}/records`, { ...filter, cursor }),
    `${queue}|${JSON.stringify(filter)}|${cursor ?? ''}`,
  );
  if (error) return <p role="alert">{error}</p>;
  if (!data) return <p role="status">Loading…</p>;
  return (
    <>
      <p role="status" class="meta">
        {data.matching === undefined ? 'Matching records' : `${count(data.matching)} matching records`}
        {cursors.length > 0 ? `, page ${cursors.length + 1}` : ''}
        {loading ? ' (loading…)' : ''}
      </p>
      <RecordTable queue={queue} records={data.records} />
      {data.malformed.length > 0 && (
        <p role="note">
          {data.malformed.length} records on this page do not read:{' '}
          {data.malformed.map((m) => `${m.id} (${m.problem})`).join('; ')}
        </p>
      )}
      <nav class="pager" aria-label="Pages of records">
        <button
          type="button"
          disabled={cursors.length === 0}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Previous page
        </button>
        <button
          type="button"
          disabled={!data.next}
          onClick={() => data.next && setCursors([...cursors, data.next])}
        >
          Next page
        </button>
      </nav>
    </>
  );
}

function SearchResults(props: { queue: string; filter: Record<string, string>; text: string }) {
  const [state, setState] = useState<{
    matches: StoredDeadLetter[];
    scanned: number;
    total: number;
    next?: string;
  }>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const more = (cursor?: string) => {
    setBusy(true);
    get<DeadLetterSearchResult>(`/queues/${encodeURIComponent(props.queue)}/search`, {
      ...props.filter,
      q: props.text,
      cursor,
    })
      .then((chunk) =>
        setState((s) => ({
          matches: [...(s?.matches ?? []), ...chunk.records],
          // The search's own count: it carries over from one chunk to the next through the cursor.
          scanned: chunk.scanned,
          total: chunk.total,
          ...(chunk.next ? { next: chunk.next } : {}),
        })),
      )
      .catch((e: unknown) => setError(String(e)))
      .finally(() => setBusy(false));
  };
  useEffect(() => more(), []);
  if (error) return <p role="alert">{error}</p>;
  if (!state) return <p role="status">Searching…</p>;
  return (
    <>
      <p role="status" class="meta" data-testid="search-progress">
        {count(state.matches.length)} found for “{props.text}”; searched {count(state.scanned)} of{' '}
        {count(state.total)}
        {state.next ? '' : ' (all)'}
      </p>
      <RecordTable queue={props.queue} records={state.matches} />
      {state.next && (
        <button type="button" disabled={busy} onClick={() => more(state.next)}>
          More… (search the next records)
        </button>
      )}
    </>
  );
}

export function RecordTable({ queue, records }: { queue: string; records: StoredDeadLetter[] }) {
  if (records.length === 0) return <p>No records.</p>;
  return (
    <table class="grid" aria-label="Dead-letter records">
      <thead>
        <tr>
          <th scope="col">Record</th>
          <th scope="col">Job</th>
          <th scope="col">Name</th>
          <th scope="col">Reason</th>
          <th scope="col">Dependency</th>
          <th scope="col">Dead-lettered</th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        {records.map((r) => (
          <tr key={r.id} data-record={r.id}>
            <th scope="row">
              <a href={href(['dead-letters', queue, r.id])}>{r.id}</a>
            </th>
            <td>{r.jobId}</td>
            <td>{r.name}</td>
            <td>{r.reason}</td>
            <td>{r.dependency}</td>
            <td>{when(r.deadLetteredAt)}</td>
            <td class="error-text">{r.lastError.message}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
