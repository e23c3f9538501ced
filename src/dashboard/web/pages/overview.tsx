import { BudgetChart } from '../components/budget-chart.js';
import { count, when } from '../components/format.js';
import { holdText, inFlightText, limitsLine, overrideText } from '../components/limits-text.js';
import { useOverview } from '../components/use-overview.js';
import { href } from '../route.js';
import type { AttentionReason, DependencyStatus } from '../types.js';

/** Needs attention first, then every dependency with its budget, breaker and dead letters, live. */
export function OverviewPage() {
  const { snapshot, history, connected, error } = useOverview();
  if (!snapshot) return <p role="status">{error ? `Cannot read the fleet: ${error}` : 'Loading…'}</p>;
  const hasFlow =
    snapshot.pausedWorkers !== undefined ||
    snapshot.parkedJobs !== undefined ||
    snapshot.flowControl !== undefined;
  const hasLimits = snapshot.dependencies.some((d) => d.limits);
  const attention = snapshot.needsAttention.flatMap((name) =>
    snapshot.dependencies.filter((d) => d.dependency === name),
  );
  return (
    <section aria-labelledby="overview-title" data-updated-at={snapshot.atMs}>
      <h1 id="overview-title">Overview</h1>
      <p class="meta" role="status">
        {connected ? 'Live' : 'Reconnecting…'} · updated {when(snapshot.atMs)}
        {error ? ` · last read failed: ${error}` : ''}
        {snapshot.errors.map((e) => ` · ${e.source} unreadable: ${e.message}`).join('')}
      </p>
      {snapshot.flowControl?.on === false && (
        <p class="flow-off" role="alert" data-field="flow-control">
          <strong>Flow control is off</strong> fleet-wide: workers pause, park and pace nothing, and release
          what they parked. <code>stormguard flow on</code> turns it back on.
        </p>
      )}
      <h2>Needs attention</h2>
      {attention.length === 0 ? (
        <p class="ok">Nothing needs attention.</p>
      ) : (
        <ul class="attention" aria-label="Needs attention">
          {attention.map((d) => (
            <li
              key={d.dependency}
              class={CRITICAL.has(d.attention[0] ?? 'dead-letters') ? 'critical' : 'warning'}
            >
              <strong>{d.dependency}</strong>: {d.attention.map((a) => describe(a, d)).join(' · ')}
            </li>
          ))}
        </ul>
      )}
      <h2>Dependencies</h2>
      {snapshot.dependencies.length === 0 ? (
        <p>No dependency has budget or breaker state yet.</p>
      ) : (
        <table class="grid" aria-label="Dependencies">
          <thead>
            <tr>
              <th scope="col">Dependency</th>
              <th scope="col">Breaker</th>
              <th scope="col">Allowance</th>
              <th scope="col">Spent</th>
              <th scope="col">Denied</th>
              <th scope="col">Successes</th>
              <th scope="col">Headroom</th>
              <th scope="col">Dead letters</th>
              {hasFlow && <th scope="col">Workers paused / jobs parked</th>}
              {hasLimits && <th scope="col">Limits</th>}
            </tr>
          </thead>
          <tbody>
            {snapshot.dependencies.map((d) => (
              <DependencyRow key={d.dependency} view={d} hasFlow={hasFlow} hasLimits={hasLimits} />
            ))}
          </tbody>
        </table>
      )}
      <div class="charts">
        {snapshot.dependencies
          .filter((d) => d.budget)
          .map((d) => (
            <BudgetChart key={d.dependency} dependency={d.dependency} samples={history[d.dependency] ?? []} />
          ))}
      </div>
      <h2>Dead-letter queues</h2>
      {snapshot.queues.length === 0 ? (
        <p>No queue has registered with the dead-letter store.</p>
      ) : (
        <table class="grid" aria-label="Dead-letter queues">
          <thead>
            <tr>
              <th scope="col">Queue</th>
              <th scope="col">Records</th>
              <th scope="col">By reason</th>
              <th scope="col">Evicted</th>
            </tr>
          </thead>
          <tbody>
            {snapshot.queues.map((q) => (
              <tr key={q.queue}>
                <th scope="row">
                  <a href={href(['dead-letters', q.queue])}>{q.queue}</a>
                </th>
                <td data-field="count">{count(q.count)}</td>
                <td>
                  {Object.entries(q.byReason).map(([reason, n]) => (
                    <a key={reason} class="tag" href={href(['dead-letters', q.queue], { reason })}>
                      {reason}: {count(n)}
                    </a>
                  ))}
                </td>
                <td>{count(q.evicted)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

const CRITICAL = new Set<AttentionReason>(['breaker-forced-open', 'breaker-open', 'budget-exhausted']);

/** An attention reason in words, with its figure where it has one. */
function describe(reason: AttentionReason, d: DependencyStatus): string {
  switch (reason) {
    case 'breaker-forced-open':
      return `breaker forced open by ${d.breaker?.override?.by ?? '?'}: ${d.breaker?.override?.reason ?? ''}`;
    case 'breaker-forced-closed':
      return `breaker forced closed by ${d.breaker?.override?.by ?? '?'}`;
    case 'breaker-open':
      return 'breaker open';
    case 'breaker-half-open':
      return 'breaker half-open (probing)';
    case 'budget-exhausted':
      return 'no retry headroom left';
    case 'budget-denying':
      return `${count(d.budget?.denied)} retries denied`;
    case 'budget-unreadable':
      return `budget unreadable: ${d.budget?.unreadable ?? ''}`;
    case 'degraded':
      return 'store unreachable, local fallback answering';
    case 'marked-down':
      return 'marked down by flow control';
    case 'limit-held':
      return holdText(d.limits!) ?? 'held by Retry-After';
    case 'limit-paused':
      return overrideText(d.limits!) ?? 'paused';
    case 'limit-pinned':
      return `${inFlightText(d.limits!)}: pinned at its limit`;
    case 'workers-paused':
      return `${count(d.pausedWorkers)} ${d.pausedWorkers === 1 ? 'worker' : 'workers'} paused`;
    case 'jobs-parked':
      return `${count(d.parkedJobs)} ${d.parkedJobs === 1 ? 'job' : 'jobs'} parked`;
    case 'dead-letters':
      return `${count(d.deadLetters?.total)} dead letters`;
  }
}

function DependencyRow({
  view,
  hasFlow,
  hasLimits,
}: {
  view: DependencyStatus;
  hasFlow: boolean;
  hasLimits: boolean;
}) {
  const b = view.budget;
  return (
    <tr data-dependency={view.dependency}>
      <th scope="row">{view.dependency}</th>
      <td>
        <span class={`state state-${view.breaker?.state ?? 'none'}`} data-field="breaker">
          {view.breaker?.state ?? '–'}
        </span>
      </td>
      <td data-field="allowance">{count(b?.allowance)}</td>
      <td data-field="spent">{count(b?.spent)}</td>
      <td data-field="denied">{count(b?.denied)}</td>
      <td data-field="successes">{count(b?.successes)}</td>
      <td data-field="headroom">{count(b?.headroom)}</td>
      <td>
        <span data-field="dead-letters">{count(view.deadLetters?.total)}</span>
        {view.deadLetters?.byReason && Object.keys(view.deadLetters.byReason).length > 0 && (
          <span class="meta">
            {' '}
            (
            {Object.entries(view.deadLetters.byReason)
              .map(([reason, n]) => `${reason} ${count(n)}`)
              .join(', ')}
            )
          </span>
        )}
      </td>
      {hasFlow && (
        <td data-field="flow">
          {count(view.pausedWorkers)} paused / {count(view.parkedJobs)} parked
        </td>
      )}
      {hasLimits && <td data-field="limits">{view.limits ? limitsLine(view.limits) : '–'}</td>}
    </tr>
  );
}
