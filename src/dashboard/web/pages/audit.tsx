import { useState } from 'preact/hooks';
import { get } from '../api.js';
import { when } from '../components/format.js';
import { useData } from '../components/use-data.js';
import type { AuditPage as AuditPageData } from '../types.js';

/** Who did what, when and why: every action taken through the console or the CLI, newest first. */
export function AuditPage() {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const { data, error } = useData(() => get<AuditPageData>('/audit', { cursor }), cursor ?? '');
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      {error && <p role="alert">{error}</p>}
      {data && data.entries.length === 0 && <p>No action has been recorded yet.</p>}
      {data && data.entries.length > 0 && (
        <table class="grid" aria-label="Audit log">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">What</th>
              <th scope="col">On</th>
              <th scope="col">Why</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {data.entries.map((e) => (
              <tr key={e.id} data-audit={e.id}>
                <td>{when(e.atMs)}</td>
                <td>{e.by}</td>
                <td data-field="action">{e.action}</td>
                <td data-field="target">{e.target}</td>
                <td data-field="reason">{e.reason ?? ''}</td>
                <td class="meta">{e.detail ? JSON.stringify(e.detail) : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages of the audit log">
        <button
          type="button"
          disabled={cursors.length === 0}
          onClick={() => setCursors(cursors.slice(0, -1))}
        >
          Newer
        </button>
        <button
          type="button"
          disabled={!data?.next}
          onClick={() => data?.next && setCursors([...cursors, data.next])}
        >
          Older
        </button>
      </nav>
    </section>
  );
}
