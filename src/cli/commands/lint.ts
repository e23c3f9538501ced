import type { Command } from 'commander';
import type { LintReport } from '../../config/lint-config.js';
import { type CliIO, printJson } from '../io.js';
import { withExamples } from '../options.js';
import { table } from './dlq-output.js';

/**
 * `stormguard lint <config>`: checks every policy in a config file against the retry design checklist
 * (idempotency before retries, classified errors, finite limits, jitter, cap, dead-letter target, key TTL
 * >= max age). Exit code 1 when any finding is an error. A .js, .mjs or .ts config is executed to be read;
 * `--no-exec` reads data formats only, for configs from untrusted sources (a pull request in CI).
 *
 * @example
 * stormguard lint stormguard.config.yaml
 * stormguard lint policies.ts --json
 */
export function register(program: Command, io: CliIO): void {
  withExamples(program.command('lint'), [
    'stormguard lint stormguard.config.yaml',
    'stormguard lint policies.ts --json',
    'stormguard lint --no-exec stormguard.config.yaml   # a pull request in CI: never runs its code',
  ])
    .description('check the policies of a config file against the retry design checklist; exit 1 on errors')
    .argument('<config>', 'config file: .json, .yaml/.yml, or .js/.mjs/.ts (with tsx), which are executed')
    .option('--no-exec', 'read data formats only (.json, .yaml); refuse configs that are code')
    .option('--json', 'print JSON')
    .action(async (path: string, flags: { json?: boolean; exec: boolean }) => {
      const [{ readConfigFile }, { lintConfig }] = await Promise.all([
        import('../../config/read-config-file.js'),
        import('../../config/lint-config.js'),
      ]);
      const report = lintConfig(await readConfigFile(path, { execute: flags.exec }), path);
      if (flags.json) printJson(io, { file: path, ...report });
      else io.stdout.write(`${formatReport(path, report)}\n`);
      if (report.errors > 0) io.exitCode = 1;
    });
}

/** The human `lint` output: one line per finding, then a summary. */
export function formatReport(path: string, report: LintReport): string {
  const order = { error: 0, warning: 1, info: 2 };
  const findings = [...report.findings].sort((a, b) => order[a.severity] - order[b.severity]);
  const rows = [['SEVERITY', 'POLICY', 'RULE', 'FINDING']];
  for (const f of findings) rows.push([f.severity, f.policy ?? '(config)', f.rule, f.message]);
  const infos = report.findings.length - report.errors - report.warnings;
  const summary = `${path}: ${report.policies.length} policies, ${report.errors} errors, ${report.warnings} warnings, ${infos} notes`;
  return findings.length === 0 ? `${summary}\nno findings` : `${table(rows)}\n\n${summary}`;
}
