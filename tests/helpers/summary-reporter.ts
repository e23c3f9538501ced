import { relative } from 'node:path';
import type { Reporter, SerializedError, TestModule, TestRunEndReason } from 'vitest/node';

/**
 * Ends the run with one plain line, `tests: N passed, N failed, N skipped`, that any CI can read. An
 * error raised outside a test counts as a failure: a file that cannot load, a `beforeAll`/`afterAll`
 * hook that throws (its suite's tests are then skipped, not failed), an unhandled rejection or
 * exception. Each is named on a line of its own before the summary, so a red run never says 0 failed.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    modules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
    reason: TestRunEndReason,
  ): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const outside: string[] = unhandledErrors.map((error) => `unhandled: ${firstLine(error)}`);
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      for (const suite of [module, ...module.children.allSuites()]) {
        const file = relative(
          process.cwd(),
          suite.type === 'module' ? suite.moduleId : suite.module.moduleId,
        );
        const where = suite.type === 'module' ? file : `${file} > ${suite.fullName}`;
        outside.push(...suite.errors().map((error) => `${where}: ${firstLine(error)}`));
      }
    }
    // vitest failed the run for a reason none of the above shows: still a failure, never a green line.
    if (reason !== 'passed' && failed === 0 && outside.length === 0) outside.push(`the run ended ${reason}`);
    for (const line of outside) process.stdout.write(`\nerror outside a test: ${line}`);
    failed += outside.length;
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}

function firstLine(error: SerializedError): string {
  return `${error.name ?? 'Error'}: ${(error.message ?? String(error)).split('\n')[0]}`;
}
