import { useState } from 'preact/hooks';
import { act } from '../api.js';
import { when } from '../components/format.js';
import { holdText, inFlightText, overrideText, rateText } from '../components/limits-text.js';
import { canAct } from '../components/token-box.js';
import { useOverview } from '../components/use-overview.js';
import type { DependencyLimitStatus } from '../types.js';

const ACTIONS = [
  { value: 'set', label: 'Set limits' },
  { value: 'pause', label: 'Pause' },
  { value: 'resume', label: 'Resume' },
  { value: 'reset', label: 'Reset (back to code)' },
] as const;

type Action = (typeof ACTIONS)[number]['value'];

/**
 * Every limited dependency, live: calls in flight against the cap, the rate, a Retry-After hold, an
 * operator's override; and set / pause / resume / reset, each with a required reason and an optional expiry.
 */
export function LimitsPage() {
  const { snapshot, error } = useOverview();
  if (!snapshot) return <p role="status">{error ? `Cannot read the fleet: ${error}` : 'Loading…'}</p>;
  const limited = snapshot.dependencies.flatMap((d) =>
    d.limits ? [{ dependency: d.dependency, limits: d.limits }] : [],
  );
  const unreadable = snapshot.errors.find((e) => e.source === 'limits');
  return (
    <section aria-labelledby="limits-title" data-updated-at={snapshot.atMs}>
      <h1 id="limits-title">Limits</h1>
      <p class="meta" role="status">
        Fleet-wide, per dependency · updated {when(snapshot.atMs)}
        {unreadable ? ` · limits unreadable: ${unreadable.message}` : ''}
      </p>
      {limited.length === 0 && !unreadable && (
        <p>No dependency has limits: no worker declares any, and no operator has set one.</p>
      )}
      {limited.length > 0 && (
        <table class="grid" aria-label="Limits">
          <thead>
            <tr>
              <th scope="col">Dependency</th>
              <th scope="col">In flight</th>
              <th scope="col">Rate</th>
              <th scope="col">Hold</th>
              <th scope="col">Override</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {limited.map(({ dependency, limits }) => (
              <tr key={dependency} data-dependency={dependency}>
                <th scope="row">{dependency}</th>
                <td data-field="in-flight">
                  {inFlightText(limits)}
                  {limits.pinned && <span class="state state-half-open"> at the cap</span>}
                </td>
                <td data-field="rate">{rateText(limits)}</td>
                <td data-field="hold">{holdText(limits) ?? '–'}</td>
                <td data-field="override">{overrideText(limits) ?? '–'}</td>
                <td>
                  <LimitForm dependency={dependency} limits={limits} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function LimitForm(props: { dependency: string; limits: DependencyLimitStatus }) {
  const [action, setAction] = useState<Action>(props.limits.paused ? 'resume' : 'set');
  const [maxInFlight, setMaxInFlight] = useState('');
  const [maxRate, setMaxRate] = useState('');
  const [expires, setExpires] = useState('');
  const [reason, setReason] = useState('');
  const [message, setMessage] = useState<string>();
  const disabled = !canAct();
  const name = props.dependency;
  const id = `limits-${encodeURIComponent(name)}`;
  const takesLimits = action === 'set';
  const takesExpiry = action === 'set' || action === 'pause';
  return (
    <form
      class="inline"
      aria-label={`Change the ${name} limits`}
      onSubmit={(e) => {
        e.preventDefault();
        const payload: Record<string, string> = { action, reason };
        if (takesLimits && maxInFlight !== '') payload.maxInFlight = maxInFlight;
        if (takesLimits && maxRate !== '') payload.maxRatePerSecond = maxRate;
        if (takesExpiry && expires !== '') payload.expires = expires;
        act<{ message: string }>(`/limits/${encodeURIComponent(name)}`, payload)
          .then((r) => {
            setMessage(r.message);
            setReason('');
          })
          .catch((err: unknown) => setMessage(err instanceof Error ? err.message : String(err)));
      }}
    >
      <label for={`${id}-action`} class="sr-only">
        Action on {name}
      </label>
      <select
        id={`${id}-action`}
        value={action}
        disabled={disabled}
        onChange={(e) => setAction(e.currentTarget.value as Action)}
      >
        {ACTIONS.map((a) => (
          <option key={a.value} value={a.value}>
            {a.label}
          </option>
        ))}
      </select>
      {takesLimits && (
        <>
          <label for={`${id}-in-flight`} class="sr-only">
            Max in flight for {name}
          </label>
          <input
            id={`${id}-in-flight`}
            inputMode="numeric"
            size={8}
            placeholder="max in flight"
            value={maxInFlight}
            disabled={disabled}
            onInput={(e) => setMaxInFlight(e.currentTarget.value)}
          />
          <label for={`${id}-rate`} class="sr-only">
            Max rate per second for {name}
          </label>
          <input
            id={`${id}-rate`}
            inputMode="decimal"
            size={8}
            placeholder="max per second"
            value={maxRate}
            disabled={disabled}
            onInput={(e) => setMaxRate(e.currentTarget.value)}
          />
        </>
      )}
      {takesExpiry && (
        <>
          <label for={`${id}-expires`} class="sr-only">
            Expires after, for {name}
          </label>
          <input
            id={`${id}-expires`}
            size={9}
            placeholder="expires (30m)"
            value={expires}
            disabled={disabled}
            onInput={(e) => setExpires(e.currentTarget.value)}
          />
        </>
      )}
      <label for={`${id}-reason`} class="sr-only">
        Reason for the {name} change
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
