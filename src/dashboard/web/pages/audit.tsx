import { get } from '../api.js';
import { when } from '../components/format.js';
import { useData } from '../components/use-data.js';

/** One entry of the audit log, as the server lists it. */
interface AuditEntry {
  atMs: number;
  actor: string;
  action: string;
  target: string;
  reason?: string;
  detail?: string;
}

/** Who did what, when and why: every action taken through the console. */
export function AuditPage() {
  const { data, error } = useData(() => get<{ entries: AuditEntry[] }>('/audit'), 'audit');
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      {error && <p role="alert">{error}</p>}
      {data && data.entries.length === 0 && <p>No action has been taken yet.</p>}
      {data && data.entries.length > 0 && (
        <table class="grid" aria-label="Audit log">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">What</th>
              <th scope="col">On</th>
              <th scope="col">Why</th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {data.entries.map((e, i) => (
              <tr key={`${e.atMs}-${i}`}>
                <td>{when(e.atMs)}</td>
                <td>{e.actor}</td>
                <td data-field="action">{e.action}</td>
                <td>{e.target}</td>
                <td>{e.reason ?? ''}</td>
                <td>{e.detail ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
