import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FixtureProject } from '../helpers/fixture-project.js';
import type { MatrixCell } from './cells.js';

/** One end-to-end test's outcome in a cell. */
export interface CellTest {
  readonly name: string;
  readonly state: 'passed' | 'failed' | 'skipped';
  /** The first line of each failure message. */
  readonly failures: readonly string[];
}

/** What a cell's own vitest run reported. */
export interface CellRun {
  readonly fixture: FixtureProject;
  /** The vitest exit code (0 when every test passed and nothing failed outside them). */
  readonly exitCode: number | null;
  readonly tests: readonly CellTest[];
  /** Errors vitest reported outside any test (a file that failed to load, an unhandled rejection). */
  readonly errors: readonly string[];
  /** The run's folder, kept when the run failed: its copied tests, vitest's output (`output.log`). */
  readonly dir: string;
}

interface JsonReport {
  success?: boolean;
  testResults?: {
    name: string;
    status: string;
    message?: string;
    assertionResults?: { fullName: string; status: string; failureMessages?: string[] }[];
  }[];
}

/**
 * The tests and the errors outside tests in a cell's vitest JSON report (`report.json`), with file names
 * relative to the cell's folder `dir`. A missing report (vitest died before writing it) has neither.
 *
 * @example
 * const { tests, errors } = readCellReport(join(dir, 'report.json'), dir);
 */
export function readCellReport(path: string, dir: string): Pick<CellRun, 'tests' | 'errors'> {
  const report: JsonReport = existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : {};
  const tests = (report.testResults ?? []).flatMap((file) =>
    (file.assertionResults ?? []).map((test) => ({
      name: `${file.name.slice(dir.length + 1)} > ${test.fullName}`,
      state: stateOf(test.status),
      failures: (test.failureMessages ?? []).map((message) => message.split('\n')[0] ?? ''),
    })),
  );
  const errors = (report.testResults ?? [])
    // A file that failed with no failing test: it could not load, or a hook threw and its tests were skipped.
    .filter(
      (file) =>
        file.status === 'failed' && !(file.assertionResults ?? []).some((test) => test.status === 'failed'),
    )
    .map((file) => `${file.name.slice(dir.length + 1)}: ${file.message || 'failed outside its tests'}`);
  return { tests, errors };
}

/**
 * One paragraph for a failing cell: which versions it ran, what failed and where the whole output is.
 *
 * @example
 * expect(passedCleanly(run), describeRun(cell, run)).toBe(true);
 */
export function describeRun(cell: MatrixCell, run: CellRun): string {
  const versions = Object.entries(run.fixture.versions)
    .filter(([, version]) => version !== undefined)
    .map(([name, version]) => `${name} ${version}`)
    .join(', ');
  const failed = run.tests.filter((test) => test.state === 'failed');
  const lines = [
    `${cell.name} (${versions}; STORMGUARD_TEST_BACKEND=${cell.backend}): vitest exited ${run.exitCode}, ` +
      `${count(run, 'passed')} passed, ${failed.length} failed, ${count(run, 'skipped')} skipped`,
    ...run.errors.map((error) => `  error: ${error.split('\n')[0]}`),
    ...failed.map((test) => `  ✗ ${test.name}: ${test.failures[0] ?? ''}`),
    `  whole output: ${join(run.dir, 'output.log')}`,
  ];
  if (run.tests.length === 0) lines.push('  no test ran: a cell that runs nothing checks nothing');
  return lines.join('\n');
}

/**
 * True when the cell ran and passed at least one end-to-end test (the probe alone proves nothing), no
 * test failed, and vitest reported nothing outside the tests.
 */
export function passedCleanly(run: CellRun): boolean {
  return (
    run.exitCode === 0 &&
    run.errors.length === 0 &&
    run.tests.some((test) => test.state === 'passed' && test.name.startsWith('tests/e2e/')) &&
    run.tests.every((test) => test.state !== 'failed')
  );
}

function count(run: CellRun, state: CellTest['state']): number {
  return run.tests.filter((test) => test.state === state).length;
}

function stateOf(status: string): CellTest['state'] {
  if (status === 'passed') return 'passed';
  if (status === 'failed') return 'failed';
  return 'skipped';
}
