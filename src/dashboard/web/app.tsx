import { TokenBox } from './components/token-box.js';
import { AuditPage } from './pages/audit.js';
import { BreakersPage } from './pages/breakers.js';
import { BulkReplayPage } from './pages/bulk-replay.js';
import { DeadLettersPage } from './pages/dead-letters.js';
import { LimitsPage } from './pages/limits.js';
import { OverviewPage } from './pages/overview.js';
import { RecordPage } from './pages/record.js';
import { href, useRoute } from './route.js';

const NAV: { parts: string[]; label: string; page: string }[] = [
  { parts: [], label: 'Overview', page: '' },
  { parts: ['breakers'], label: 'Breakers', page: 'breakers' },
  { parts: ['limits'], label: 'Limits', page: 'limits' },
  { parts: ['dead-letters'], label: 'Dead letters', page: 'dead-letters' },
  { parts: ['replay'], label: 'Bulk replay', page: 'replay' },
  { parts: ['audit'], label: 'Audit log', page: 'audit' },
];

/** The console: a header with the pages and the token, and the page the address names. */
export function App() {
  const route = useRoute();
  const [page = '', a, b] = route.parts;
  return (
    <>
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <span class="brand">stormguard console</span>
        <nav aria-label="Pages">
          <ul>
            {NAV.map((item) => (
              <li key={item.page}>
                <a href={href(item.parts)} aria-current={page === item.page ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <TokenBox />
      </header>
      <main id="main" tabIndex={-1}>
        {page === '' && <OverviewPage />}
        {page === 'breakers' && <BreakersPage />}
        {page === 'limits' && <LimitsPage />}
        {page === 'dead-letters' && b === undefined && <DeadLettersPage queue={a} query={route.query} />}
        {page === 'dead-letters' && a !== undefined && b !== undefined && <RecordPage queue={a} id={b} />}
        {page === 'replay' && <BulkReplayPage queue={a} runId={b} query={route.query} />}
        {page === 'audit' && <AuditPage />}
        {!NAV.some((item) => item.page === page) && <p>No such page.</p>}
      </main>
    </>
  );
}
