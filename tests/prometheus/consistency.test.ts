import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createMetrics, METRICS, prometheusNameOf } from '../../src/prometheus/index.js';
import {
  DASHBOARD_FILE,
  loadRules,
  metricNamesIn,
  OPERATIONS_FILE,
  RULES_TEST_FILE,
  RUNBOOK_FILE,
} from './rules-files.js';

interface Target {
  expr: string;
  datasource: { type: string; uid: string };
}
interface Panel {
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown; datasource?: { uid: string } }[] };
}

/** Grafana's reference to the dashboard's datasource variable. */
const DATASOURCE = ['$', '{datasource}'].join('');
const rules = loadRules();
const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
const runbook = readFileSync(RUNBOOK_FILE, 'utf8');
const operations = readFileSync(OPERATIONS_FILE, 'utf8');

/** Every series name the exporter can produce (histograms as Prometheus stores them), and the recording rules. */
async function knownNames(): Promise<Set<string>> {
  const registry = new Registry();
  createMetrics({ registry });
  const names = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    if (String(metric.type) === 'histogram')
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
    else names.add(metric.name);
  }
  for (const rule of rules) if (rule.record) names.add(rule.record);
  return names;
}

function dashboardExpressions(): string[] {
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  for (const v of dashboard.templating.list)
    if (v.type === 'query')
      exprs.push(typeof v.query === 'string' ? v.query : (v.query as { query: string }).query);
  return exprs;
}

/** GitHub's anchor for a heading. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

describe('rules and dashboard against the registry', () => {
  let known: Set<string>;
  beforeAll(async () => {
    known = await knownNames();
  });

  it('the rules use only metrics the exporter registers or the rules record', () => {
    const used = rules.flatMap((r) => metricNamesIn(r.expr));
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter((name) => !known.has(name))).toEqual([]);
  });

  it('the dashboard uses only metrics the exporter registers or the rules record', () => {
    const used = dashboardExpressions().flatMap(metricNamesIn);
    expect(used.length).toBeGreaterThan(20);
    expect(used.filter((name) => !known.has(name))).toEqual([]);
  });

  it('the dashboard shows what the issue of watching a fleet needs', () => {
    const used = new Set(dashboardExpressions().flatMap(metricNamesIn));
    for (const name of [
      'stormguard_budget_allowance',
      'stormguard_budget_spent',
      'stormguard_retries_total',
      'stormguard_budget_denials_total',
      'stormguard_dead_letters_total',
      'stormguard_retry_delay_seconds_bucket',
      'stormguard_budget_degraded',
      'stormguard_breaker_state',
      'dependency:stormguard_retry_ratio:rate5m',
    ])
      expect(used, name).toContain(name);
  });

  it('every dashboard query goes through the datasource variable', () => {
    const ds = dashboard.templating.list.find((v) => v.name === 'datasource');
    expect(ds).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const panels = dashboard.panels.filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThan(8);
    for (const panel of panels) {
      expect(panel.datasource?.uid, panel.title).toBe(DATASOURCE);
      for (const t of panel.targets ?? []) expect(t.datasource.uid, panel.title).toBe(DATASOURCE);
    }
    for (const v of dashboard.templating.list.filter((x) => x.type === 'query'))
      expect(v.datasource?.uid, v.name).toBe(DATASOURCE);
  });
});

describe('alerts', () => {
  const alerts = rules.filter((r) => r.alert);
  const headings = new Set([...runbook.matchAll(/^#{2,6} (.+)$/gm)].map((m) => slug(m[1] as string)));
  const tests = parse(readFileSync(RULES_TEST_FILE, 'utf8')) as {
    tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
  };
  const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);

  it('are the ones the fleet needs', () => {
    expect(alerts.map((a) => a.alert)).toEqual([
      'StormguardRetryBudgetExhausted',
      'StormguardDeadLetterQueueGrowing',
      'StormguardRetryRatioAboveBudget',
      'StormguardBudgetStoreDegraded',
      'StormguardBreakerOpen',
      'StormguardDependencyPaused',
      'StormguardReplayableDeadLettersEvicted',
      'StormguardJobsUnfiled',
      'StormguardFlowControlOff',
      'StormguardLimitPinned',
      'StormguardLimitHeldLong',
    ]);
    expect(alerts.find((a) => a.alert === 'StormguardRetryBudgetExhausted')).toMatchObject({
      for: '10m',
      labels: { severity: 'critical' },
    });
  });

  it.each(alerts.map((a) => [a.alert as string, a]))(
    '%s has a severity, a summary, a description and a runbook entry in docs/runbook.md',
    (_, alert) => {
      expect(['critical', 'warning']).toContain(alert.labels?.severity);
      expect(alert.annotations?.summary).toMatch(/\S/);
      expect(alert.annotations?.description?.length).toBeGreaterThan(60);
      const anchor = /^docs\/runbook\.md#(.+)$/.exec(alert.annotations?.runbook_url ?? '')?.[1];
      expect(anchor, 'runbook_url points into docs/runbook.md').toBeDefined();
      expect(headings, `docs/runbook.md heading for #${anchor}`).toContain(anchor);
    },
  );

  it.each(alerts.map((a) => [a.alert as string]))('%s is unit-tested both firing and quiet', (name) => {
    const own = cases.filter((c) => c.alertname === name);
    expect(
      own.some((c) => c.exp_alerts.length > 0),
      'a case where it fires',
    ).toBe(true);
    expect(
      own.some((c) => c.exp_alerts.length === 0),
      'a case where it does not',
    ).toBe(true);
  });
});

describe('docs/operations.md', () => {
  it('lists every metric the exporter registers', () => {
    const start = operations.indexOf('\n## Metrics');
    const end = operations.indexOf('\n## ', start + 1);
    const section = operations.slice(start, end === -1 ? undefined : end);
    expect(section.length).toBeGreaterThan(1000);
    for (const def of Object.values(METRICS)) expect(section, def.name).toContain(`stormguard_${def.name}`);
  });
});

describe('the OpenTelemetry names of the catalogue', () => {
  it('follow OpenTelemetry naming and translate back to the Prometheus names', () => {
    const names = Object.values(METRICS).map((m) => m.otel.name);
    expect(new Set(names).size).toBe(names.length);
    for (const def of Object.values(METRICS)) {
      // Lower-case dot-separated namespaces, no unit or `_total` in the name, the unit beside it.
      expect(def.otel.name).toMatch(/^stormguard(\.[a-z][a-z0-9_]*)+$/);
      expect(def.otel.name).not.toMatch(/_total$|_seconds$/);
      expect(prometheusNameOf(def)).toBe(`stormguard_${def.name}`);
    }
    expect(METRICS.retryDelay.otel).toEqual({ name: 'stormguard.retry.delay', unit: 's' });
  });
});
