import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/cli.js';
import { type FixtureProject, fixtureProject, runFolder } from '../helpers/fixture-project.js';
import { runVitest } from '../helpers/vitest-child.js';
import type { MatrixCell } from './cells.js';

/** What the end-to-end tests import beside the packages under test: linked from the repository when the fixture lacks them. */
const TEST_TOOLS = ['vitest', 'tsx', 'fast-check', 'ioredis', 'pg'] as const;

/** The test folders a cell copies into its fixture: the end-to-end tests and the helpers they import. */
const COPIED = ['tests/e2e', 'tests/helpers'] as const;

/**
 * The one module through which the end-to-end tests import stormguard: in the repository it re-exports
 * the sources, in a cell the same names from the installed package.
 */
const SUBJECT_MODULE = 'tests/e2e/stormguard.ts';
/**
 * The subject modules a cell redirects to the installed package: the one above, and the PostgreSQL stores'
 * (`stormguard/postgres`), kept apart so that a project without `pg` never loads them.
 */
const SUBJECT_MODULES = [SUBJECT_MODULE, 'tests/e2e/stormguard-postgres.ts'];

/** Checks, inside the cell, that the packages under test resolve to the fixture's install. */
const PROBE = 'tests/matrix/fixtures/resolution.probe.ts';

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
 * Runs tests/e2e on one cell of the matrix: inside the cell's fixture project (the install test's), so
 * `bullmq`, `ioredis`, `pg` and `stormguard` resolve to what that project installed, and so do the
 * worker processes the tests spawn. The tests are copied into a folder of the fixture and run by the
 * repository's vitest with `STORMGUARD_TEST_BACKEND` naming the cell's backend; test tooling the
 * fixture lacks (vitest, tsx, a client the harness needs) is linked into that folder, never into the
 * fixture's own node_modules, so the packages under test are the user's install and nothing else.
 *
 * @example
 * const run = await runCell(CELLS.bullmq5Redis);
 */
export async function runCell(cell: MatrixCell): Promise<CellRun> {
  const primary = (await import('../../vitest.config.js')).default.test ?? {};
  const fixture = await fixtureProject(cell.fixture);
  const dir = runFolder(fixture, 'e2e-');
  for (const folder of COPIED) cpSync(join(ROOT, folder), join(dir, folder), { recursive: true });
  cpSync(join(ROOT, PROBE), join(dir, 'tests', 'resolution.probe.ts'));
  for (const subject of SUBJECT_MODULES)
    writeFileSync(join(dir, subject), fromPackage(readFileSync(join(ROOT, subject), 'utf8')));
  const bypasses = sourceImports(join(dir, 'tests', 'e2e')).map(
    (file) =>
      `${file.slice(dir.length + 1)} imports the repository's src/ directly: import it through ${SUBJECT_MODULE}`,
  );
  linkTestTools(fixture, dir);
  writeFileSync(
    join(dir, 'vitest.config.mjs'),
    `export default ${JSON.stringify({
      test: {
        include: ['tests/resolution.probe.ts', 'tests/e2e/**/*.test.ts'],
        // The repository's own timeouts and global setup (the run's PostgreSQL folder), so the tests run
        // as they do in the primary cell; the copied folders keep the paths valid.
        testTimeout: primary.testTimeout,
        hookTimeout: primary.hookTimeout,
        globalSetup: primary.globalSetup,
        // The outer suite runs beside this one on a small machine: one file at a time here.
        fileParallelism: false,
      },
    })};\n`,
  );
  const { code: exitCode } = await runVitest(
    [
      'run',
      '--config',
      'vitest.config.mjs',
      '--reporter=default',
      '--reporter=json',
      '--outputFile.json=report.json',
    ],
    { cwd: dir, env: cellEnvironment(cell, fixture), logFile: join(dir, 'output.log') },
  );
  const report = readReport(join(dir, 'report.json'));
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
  const run = { fixture, exitCode, tests, errors: [...bypasses, ...errors], dir };
  if (passedCleanly(run)) rmSync(dir, { recursive: true, force: true });
  return run;
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

/** True when the cell ran at least one test, every test passed, and vitest reported nothing else. */
export function passedCleanly(run: CellRun): boolean {
  return (
    run.exitCode === 0 &&
    run.errors.length === 0 &&
    run.tests.length > 0 &&
    run.tests.every((t) => t.state !== 'failed')
  );
}

/**
 * The subject module with each `'../../src/<folder>/<file>.js'` replaced by the package entry a user
 * imports it from: the subpath whose `exports` entry is that folder's index (`src/bullmq` is
 * `stormguard/bullmq`, `src/metrics` is `stormguard/prometheus`), the core (`stormguard`) for the rest.
 * A name the entry does not export then fails the cell: the tests use only what users can import.
 */
export function fromPackage(source: string): string {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | { import?: string }>;
  };
  const entries = new Map<string, string>();
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    const file = typeof target === 'string' ? target : target.import;
    const folder = /^\.\/dist\/([^/]+)\/index\.js$/.exec(file ?? '')?.[1];
    if (folder !== undefined) entries.set(folder, `${manifest.name}${subpath.slice(1)}`);
  }
  return source.replace(
    /(['"])(?:\.\.\/)+src\/([^/'"]+)\/[^'"]+\.js\1/g,
    (_, quote: string, folder: string) => {
      return `${quote}${entries.get(folder) ?? manifest.name}${quote}`;
    },
  );
}

/** The files under `folder` that import the repository's sources by a relative path. */
function sourceImports(folder: string): string[] {
  return readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .map((name) => join(folder, name))
    .filter((file) => file.endsWith('.ts') && /(['"])(?:\.\.\/)+src\//.test(readFileSync(file, 'utf8')));
}

function count(run: CellRun, state: CellTest['state']): number {
  return run.tests.filter((test) => test.state === state).length;
}

function linkTestTools(fixture: FixtureProject, dir: string): void {
  const tools = join(dir, 'node_modules');
  mkdirSync(tools, { recursive: true });
  for (const tool of TEST_TOOLS) {
    const source = join(ROOT, 'node_modules', tool);
    if (existsSync(join(fixture.dir, 'node_modules', tool)) || !existsSync(source)) continue;
    symlinkSync(source, join(tools, tool), 'dir');
  }
}

/** What the cell's vitest adds to the environment: the backend, and what the resolution probe checks. */
function cellEnvironment(cell: MatrixCell, fixture: FixtureProject): NodeJS.ProcessEnv {
  const packages = {
    nodeModules: join(fixture.dir, 'node_modules'),
    majors: { ...cell.majors, stormguard: null },
  };
  return { STORMGUARD_TEST_BACKEND: cell.backend, STORMGUARD_CELL_PACKAGES: JSON.stringify(packages) };
}

function readReport(path: string): JsonReport {
  if (!existsSync(path)) return {};
  return JSON.parse(readFileSync(path, 'utf8')) as JsonReport;
}

function stateOf(status: string): CellTest['state'] {
  if (status === 'passed') return 'passed';
  if (status === 'failed') return 'failed';
  return 'skipped';
}
