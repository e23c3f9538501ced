import { relative } from 'node:path';
import type {
  Reporter,
  SerializedError,
  TestCase,
  TestModule,
  TestRunEndReason,
  TestSuite,
} from 'vitest/node';

/**
 * Ends the run with one plain line, `tests: N passed, N failed, N skipped`, that any CI can read. A
 * skipped test fails the run (`.skip`, `.todo`, or `skip()` inside it): what a test needs is started by
 * the harness, so a missing part is a failure, not a reason to skip. An error raised outside a test
 * counts as a failure: a file that cannot load, a `beforeAll`/`afterAll`
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
        else {
          skipped++;
          // A test skipped because its suite's hook failed is already a failure (the hook's error, below).
          if (!inFailedSuite(test))
            outside.push(
              `${relative(process.cwd(), module.moduleId)} > ${test.fullName}: skipped; a test whose ` +
                'server, browser or binary is missing must fail, never skip',
            );
        }
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
    // vitest exits 0 on a run whose only fault is a skip; the line and the exit code must agree.
    if (failed > 0) process.exitCode = 1;
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}

/** Whether a suite holding `test` (its file included) reported an error of its own. */
function inFailedSuite(test: TestCase): boolean {
  for (let parent: TestSuite | TestModule = test.parent; ; parent = parent.parent) {
    if (parent.errors().length > 0) return true;
    if (parent.type === 'module') return false;
  }
}

function firstLine(error: SerializedError): string {
  return `${error.name ?? 'Error'}: ${(error.message ?? String(error)).split('\n')[0]}`;
}
