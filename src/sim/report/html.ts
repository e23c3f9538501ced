import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { formatSummary } from '../format/summary.js';
import type { SimulationResult } from '../results.js';
import { reportData } from './data.js';
import { REPORT_SCRIPT, REPORT_STYLE } from './page.js';

let echartsSource: Promise<string> | undefined;

/**
 * Where the build put the report's ECharts bundle (`scripts/bundle-report-charts.mjs`: only the chart
 * types the report draws): next to this module in `dist`, or, when this module runs from `src`, in the
 * `dist` beside it.
 */
const CHARTS_BUNDLE = [
  new URL('./charts.js', import.meta.url),
  new URL('../../../dist/sim/report/charts.js', import.meta.url),
].map((url) => fileURLToPath(url));

/** The report's ECharts bundle, read once. */
function loadEcharts(): Promise<string> {
  const path = CHARTS_BUNDLE.find((candidate) => existsSync(candidate));
  if (path === undefined)
    return Promise.reject(
      new Error(
        `the report's chart bundle is missing (looked for ${CHARTS_BUNDLE.join(', ')}): run npm run build`,
      ),
    );
  echartsSource ??= readFile(path, 'utf8');
  return echartsSource;
}

/** Keeps embedded text from closing the `<script>` element it sits in. */
function scriptSafe(text: string): string {
  return text.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] as string,
  );
}

/**
 * A self-contained HTML report of a simulation, viewable offline: ECharts is inlined, the data is embedded.
 * Charts: the load on each dependency over time (outages shaded), first attempts against retries per
 * strategy, each budget's allowance against its spend, the queue operations each strategy causes, for a
 * dependency that answers 429 above a rate its successes against that rate, its 429s and each strategy's
 * throughput, and dead letters by reason; plus the terminal summary as a table (with refusals, queue operations, retries while
 * down and the rush after recovery).
 *
 * @example
 * await writeFile('report.html', await renderReport(await simulate(defaultScenario())));
 */
export async function renderReport(result: SimulationResult): Promise<string> {
  const echarts = await loadEcharts();
  const data = JSON.stringify(reportData(result)).replace(/</g, '\\u003c');
  const title = `stormguard simulate: ${result.scenario}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${REPORT_STYLE}</style>
</head>
<body>
<header>
<h1>${escapeHtml(title)}</h1>
<p>${escapeHtml(result.description ?? '')}</p>
</header>
<section><h2>Summary</h2><pre id="summary">${escapeHtml(formatSummary(result))}</pre></section>
<section><h2>Load on each dependency</h2><p>Requests per second (first attempts and retries); shaded: down or degraded.</p><div id="load"></div></section>
<section><h2>First attempts vs retries</h2><p>Requests per second, by strategy (and attempts a breaker refused, which send nothing).</p><div id="split"></div></section>
<section><h2>Retry budget: allowance vs spend</h2><p>Retries the budget allows in its window, and retries it has granted (per-worker budgets add up).</p><div id="budget"></div></section>
<section><h2>Queue operations</h2><p>Job fetches, re-delays, parks, releases and pauses per second: the queue work each strategy causes (a breaker that refuses calls turns them into fetches and re-delays; flow control pauses instead).</p><div id="queue"></div></section>
${
  result.dependencies.some((d) => d.rateLimit !== undefined)
    ? '<section><h2>Rate-limited answers</h2><p>Successful calls per second against the rate the dependency answers (dashed), and the calls it answered 429 with Retry-After, by strategy; then jobs completed per second until each drained.</p><div id="limited"></div></section>\n'
    : ''
}<section><h2>Dead letters</h2><p>By reason, per strategy: where the work went instead of the dependency.</p><div id="dead"></div></section>
<script id="report-data" type="application/json">${data}</script>
<script>${scriptSafe(echarts)}</script>
<script>${scriptSafe(REPORT_SCRIPT)}</script>
</body>
</html>
`;
}
