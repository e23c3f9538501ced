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
import { type CellRun, passedCleanly, readCellReport } from './cell-report.js';
import type { MatrixCell } from './cells.js';
import { fromPackage, sourceImports } from './package-entries.js';

/** What the end-to-end tests import beside the packages under test: linked from the repository when the fixture lacks them. */
const TEST_TOOLS = ['vitest', 'tsx', 'ioredis', 'pg'] as const;

/** The test folders a cell copies into its fixture: the end-to-end tests and the helpers they import. */
const COPIED = ['tests/e2e', 'tests/helpers'] as const;

/**
 * The modules through which the end-to-end tests import stormguard (`tests/e2e/stormguard*.ts`): in the
 * repository they re-export the sources, in a cell the same names from the installed package.
 */
const SUBJECT_MODULE = /^stormguard[\w-]*\.ts$/;

/** Checks, inside the cell, that the packages under test resolve to the fixture's install. */
const PROBE = 'tests/matrix/fixtures/resolution.probe.ts';

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
  const e2e = join(dir, 'tests', 'e2e');
  const subjects = readdirSync(e2e).filter((name) => SUBJECT_MODULE.test(name));
  for (const name of subjects) {
    writeFileSync(join(e2e, name), fromPackage(readFileSync(join(ROOT, 'tests', 'e2e', name), 'utf8')));
  }
  const bypasses = sourceImports(e2e).map(
    (file) =>
      `${file.slice(dir.length + 1)} imports the repository's src/ directly: import it through ` +
      `one of tests/e2e/${subjects.join(', ')}`,
  );
  linkTestTools(fixture, dir);
  writeFileSync(
    join(dir, 'vitest.config.mjs'),
    `export default ${JSON.stringify({
      test: {
        include: ['tests/resolution.probe.ts', 'tests/e2e/**/*.test.ts'],
        exclude: (cell.excludes ?? []).map((excluded) => excluded.file),
        // The repository's own timeouts and global setups (the run's PostgreSQL folder), so the tests run
        // as they do in the primary cell; the copied folders keep the paths valid.
        testTimeout: primary.testTimeout,
        hookTimeout: primary.hookTimeout,
        // The repository's dist/ is not what a cell tests (it runs the installed package): no rebuild of it.
        globalSetup: [primary.globalSetup ?? []]
          .flat()
          .filter((setup) => !String(setup).includes('dist-global-setup')),
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
  const { tests, errors } = readCellReport(join(dir, 'report.json'), dir);
  const run = { fixture, exitCode, tests, errors: [...bypasses, ...errors], dir };
  if (passedCleanly(run)) rmSync(dir, { recursive: true, force: true });
  return run;
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
