import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const RULES_FILE = fileURLToPath(
  new URL('../../src/prometheus/rules/stormguard.rules.yml', import.meta.url),
);
export const RULES_TEST_FILE = fileURLToPath(
  new URL('../../src/prometheus/rules/stormguard.rules.test.yml', import.meta.url),
);
export const DASHBOARD_FILE = fileURLToPath(
  new URL('../../src/prometheus/dashboards/stormguard.json', import.meta.url),
);
export const RUNBOOK_FILE = fileURLToPath(new URL('../../docs/runbook.md', import.meta.url));
export const OPERATIONS_FILE = fileURLToPath(new URL('../../docs/operations.md', import.meta.url));

export interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Every rule of the shipped rules file. */
export function loadRules(): Rule[] {
  const doc = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

/**
 * Metric names a PromQL expression refers to: identifiers that name stormguard series or recording
 * rules. Label names and values, functions and keywords never contain `stormguard_`.
 */
export function metricNamesIn(expr: string): string[] {
  return [...new Set(expr.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [])].filter((t) => t.includes('stormguard_'));
}
