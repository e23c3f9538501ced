import { expect, it } from 'vitest';
import { describeRun, passedCleanly } from './cell-report.js';
import type { MatrixCell } from './cells.js';
import { runCell } from './run-cell.js';

/** A cell's whole run: fixture install, version check, the end-to-end suite. Install and e2e take minutes on a cold cache. */
const CELL_TIMEOUT_MS = 600_000;

/**
 * Declares the test for one secondary cell of the matrix: its fixture installs without flags and with
 * the cell's majors, and tests/e2e pass on it. A fixture that cannot install fails the test with npm's
 * output; a failing end-to-end test fails it with the test's name and first error line.
 *
 * @example
 * matrixCell(CELLS.bullmq5Redis);
 */
export function matrixCell(cell: MatrixCell): void {
  it(`tests/e2e pass on ${cell.name}`, { timeout: CELL_TIMEOUT_MS }, async () => {
    const run = await runCell(cell);
    for (const [name, major] of Object.entries(cell.majors)) {
      const installed = run.fixture.versions[name as keyof typeof run.fixture.versions];
      expect(installed?.split('.')[0], `${name} in ${run.fixture.command}`).toBe(String(major));
    }
    expect(passedCleanly(run), describeRun(cell, run)).toBe(true);
  });
}
