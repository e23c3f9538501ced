import { useState } from 'preact/hooks';
import { act, get } from '../api.js';
import { ago, count } from '../components/format.js';
import { canAct } from '../components/token-box.js';
import { useData } from '../components/use-data.js';
import type { ListedBreaker } from '../types.js';

type Breaker = ListedBreaker;

const ACTIONS = [
  { value: 'force-open', label: 'Force open' },
  { value: 'force-closed', label: 'Force closed' },
  { value: 'reset', label: 'Reset (lift the override)' },
];

/** Every breaker, with force open / force closed / reset, each with a required reason. */
export function BreakersPage() {
  const { data, error, reload } = useData(
    () => get<{ breakers: Breaker[]; overrides: boolean }>('/breakers'),
    'b',
  );
  return (
    <section aria-labelledby="breakers-title">
      <h1 id="breakers-title">Breakers</h1>
      {error && <p role="alert">{error}</p>}
      {data && data.breakers.length === 0 && <p>No breaker state yet.</p>}
      {data && data.breakers.length > 0 && (
        <table class="grid" aria-label="Breakers">
          <thead>
            <tr>
              <th scope="col">Dependency</th>
              <th scope="col">State</th>
              <th scope="col">Failures / volume</th>
              <th scope="col">In a row</th>
              <th scope="col">Opened</th>
              <th scope="col">Override</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {data.breakers.map((b) => (
              <tr key={b.dependency} data-dependency={b.dependency}>
                <th scope="row">{b.dependency}</th>
                <td>
                  <span class={`state state-${b.state}`} data-field="state">
                    {b.state}
                  </span>
                </td>
                <td>
                  {count(b.failures)} / {count(b.volume)}
                </td>
                <td>{count(b.consecutiveFailures)}</td>
                <td>{b.openedAtMs ? ago(b.openedAtMs, b.nowMs) : '–'}</td>
                <td data-field="override">
                  {b.override ? `forced ${b.override.state} by ${b.override.by}: ${b.override.reason}` : '–'}
                </td>
                <td>
                  <OverrideForm dependency={b.dependency} enabled={data.overrides} onDone={reload} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function OverrideForm(props: { dependency: string; enabled: boolean; onDone: () => void }) {
  const [action, setAction] = useState('force-open');
  const [reason, setReason] = useState('');
  const [message, setMessage] = useState<string>();
  const disabled = !canAct() || !props.enabled;
  const id = `override-${props.dependency}`;
  return (
    <form
      class="inline"
      aria-label={`Override the ${props.dependency} breaker`}
      onSubmit={(e) => {
        e.preventDefault();
        act<{ message: string }>(`/breakers/${encodeURIComponent(props.dependency)}`, { action, reason })
          .then((r) => {
            setMessage(r.message);
            setReason('');
            props.onDone();
          })
          .catch((err: unknown) => setMessage(err instanceof Error ? err.message : String(err)));
      }}
    >
      <label for={`${id}-action`} class="sr-only">
        Action on {props.dependency}
      </label>
      <select
        id={`${id}-action`}
        value={action}
        disabled={disabled}
        onChange={(e) => setAction(e.currentTarget.value)}
      >
        {ACTIONS.map((a) => (
          <option key={a.value} value={a.value}>
            {a.label}
          </option>
        ))}
      </select>
      <label for={`${id}-reason`} class="sr-only">
        Reason for the {props.dependency} override
      </label>
      <input
        id={`${id}-reason`}
        required
        placeholder="reason (required)"
        value={reason}
        disabled={disabled}
        onInput={(e) => setReason(e.currentTarget.value)}
      />
      <button type="submit" disabled={disabled}>
        Apply
      </button>
      {message && <span role="status"> {message}</span>}
    </form>
  );
}
