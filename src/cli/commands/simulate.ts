import { access, constants, stat, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { systemClock } from '../../common/clock.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { StrategyResult } from '../../sim/results.js';
import type { SimulationProgress } from '../../sim/simulate.js';
import { type CliIO, printJson } from '../io.js';
import { withExamples } from '../options.js';
import { lineProgress, terminalProgress } from '../progress.js';

interface SimulateFlags {
  scenario?: string;
  seed?: string;
  strategies?: string;
  report?: string;
  json?: boolean;
  /** `true` for the default example, or an example's name. */
  example?: boolean | string;
  chart: boolean;
  allowLarge?: boolean;
}

/**
 * `stormguard simulate`: runs the retry-storm simulator on a scenario file (or the built-in one: 40 000
 * search-indexing jobs and a search cluster that goes down) and prints, per strategy, the requests each
 * dependency received, the peak retry rate while it was down, completions, dead letters and drain time.
 */
export function register(program: Command, io: CliIO): void {
  withExamples(program.command('simulate'), [
    'stormguard simulate',
    'stormguard simulate --example > outage.yaml',
    'stormguard simulate --example rate-limited-api > api.yaml',
    'stormguard simulate --scenario outage.yaml --seed 42 --report report.html',
  ])
    .description('simulate an outage: per-job ceilings vs fleet and per-worker retry budgets, side by side')
    .option('--scenario <file>', 'a YAML or JSON scenario (default: the built-in search-cluster outage)')
    .option('--seed <n>', "random seed (default: the scenario's)")
    .option('--strategies <list>', 'comma-separated strategy names to run (default: all in the scenario)')
    .option('--report <file>', 'also write a self-contained HTML report with charts')
    .option('--json', 'print { scenario, seed, strategies: [...] } as JSON')
    .option(
      '--example [name]',
      'print a commented example scenario to start from, and exit (checkout-mail-outage, the default, or rate-limited-api)',
    )
    .option('--no-chart', 'leave out the terminal chart of retries per second')
    .option(
      '--allow-large',
      'run a scenario estimated past 5 minutes of CPU or 2 GB of memory (refused without it, exit 2)',
    )
    .action((flags: SimulateFlags) => runSimulate(flags, io));
}

async function runSimulate(flags: SimulateFlags, io: CliIO): Promise<void> {
  if (flags.example) {
    const { exampleScenarioText } = await import('../../sim/scenario/example.js');
    io.stdout.write(await exampleScenarioText(flags.example === true ? undefined : flags.example));
    return;
  }
  if (flags.report !== undefined) await assertWritable(flags.report);
  const options = {
    ...(flags.seed !== undefined ? { seed: parseSeed(flags.seed) } : {}),
    ...(flags.strategies !== undefined ? { strategies: parseList(flags.strategies) } : {}),
  };
  const [{ simulate }, { defaultScenario }, { loadScenarioFile }] = await Promise.all([
    import('../../sim/simulate.js'),
    import('../../sim/scenario/default.js'),
    import('../../sim/scenario/load.js'),
  ]);
  const scenario = flags.scenario ? await loadScenarioFile(flags.scenario) : defaultScenario();
  // Refused before it runs when it would take long or need much memory, unless told.
  const [{ estimateSimulationCost, refuseLargeSimulation }, { resolveStrategies }] = await Promise.all([
    import('../simulation-cost.js'),
    import('../../sim/strategies.js'),
  ]);
  const kinds = resolveStrategies(scenario, options.strategies).map((s) => s.kind);
  if (!flags.allowLarge) refuseLargeSimulation(estimateSimulationCost(scenario, kinds));
  const progress = await progressBar(io);
  let result: Awaited<ReturnType<typeof simulate>>;
  try {
    result = await simulate(scenario, {
      ...options,
      onProgress: progress.update,
      ...(io.signal ? { signal: io.signal } : {}),
    });
  } finally {
    progress.stop();
  }

  if (flags.report) {
    const { renderReport } = await import('../../sim/report/html.js');
    await writeFile(flags.report, await renderReport(result));
    io.stderr.write(`report written to ${flags.report}\n`);
  }
  if (flags.json) {
    const { summarize } = await import('../../sim/results.js');
    printJson(io, summarize(result));
  } else {
    const [{ formatSummary }, { formatRetryChart }] = await Promise.all([
      import('../../sim/format/summary.js'),
      import('../../sim/format/chart.js'),
    ]);
    io.stdout.write(formatSummary(result));
    if (flags.chart) io.stdout.write(`\n${formatRetryChart(result, { color: io.stdout.isTTY === true })}`);
  }

  const lost = result.strategies.filter((s) => s.lost > 0);
  const unfinished = result.strategies.filter((s) => s.unfinished > 0);
  for (const s of lost)
    io.stderr.write(`stormguard: ${s.name}: ${s.lost} jobs lost (a simulator bug; please report it)\n`);
  for (const s of unfinished) io.stderr.write(`stormguard: ${s.name}: ${horizonAdvice(s)}\n`);
  if (lost.length > 0 || unfinished.length > 0) io.exitCode = 1;
}

/**
 * Why a run stopped at the horizon with work pending, and what would help: jobs still waiting for a
 * worker mean the fleet lacked capacity (no retry setting fixes that); jobs delayed until a retry mean the
 * policy holds retries open past the horizon.
 */
function horizonAdvice(s: StrategyResult): string {
  const { waiting, running, delayed } = s.pending;
  const parts: string[] = [];
  if (waiting + running > 0)
    parts.push(
      `${waiting + running} waiting for or holding a worker (the workers could not keep up: add workers or concurrency, or raise "horizon")`,
    );
  if (delayed > 0)
    parts.push(`${delayed} delayed until a retry (raise "horizon", or give the policy a maxAgeMs)`);
  return `did not drain by the horizon: ${s.unfinished} jobs pending, ${parts.join('; ')}`;
}

/** Checks `--report` before the run, so a typo in its path does not cost a whole simulation. */
async function assertWritable(path: string): Promise<void> {
  const isDirectory = await stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
  if (isDirectory)
    throw new InvalidInputError(`--report: ${path} is a directory; give a file name such as report.html`);
  const dir = dirname(resolve(path));
  await access(dir, constants.W_OK).catch(() => {
    throw new InvalidInputError(`--report: cannot write ${path}: ${dir} does not exist or is not writable`);
  });
}

function parseSeed(text: string): number {
  if (!/^-?\d+$/.test(text.trim()) || !Number.isSafeInteger(Number(text)))
    throw new InvalidInputError(`--seed: "${text}" is not a whole number; give an integer such as 42`);
  return Number(text);
}

function parseList(text: string): string[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (names.length === 0)
    throw new InvalidInputError(
      '--strategies: give at least one name, e.g. --strategies ceiling-only,fleet-budget',
    );
  return names;
}

/** A progress bar on stderr, only when stderr is a terminal (never in pipes, files or CI logs). */
async function progressBar(
  io: CliIO,
): Promise<{ update: (p: SimulationProgress) => void; stop: () => void }> {
  const bar = await terminalProgress(io, {
    format: 'simulating {strategy} |{bar}| {percentage}% | strategy {n} of {count}',
    clearOnComplete: true,
  });
  if (!bar) {
    // No terminal: a line now and then, so a long run is never silent.
    const report = lineProgress(io, systemClock);
    const count = (n: number) => Math.round(n).toLocaleString('en-US');
    return {
      update: (p) =>
        report(
          `simulating ${p.strategy} (strategy ${p.index + 1} of ${p.count}): ${count(p.finished)} of about ${count(p.expected)} jobs finished`,
        ),
      stop: () => {},
    };
  }
  return {
    // A thousand steps per strategy, so the bar moves smoothly across all of them.
    update: (p) =>
      bar.update(
        p.count * 1_000,
        p.index * 1_000 + Math.min(1_000, Math.round((p.finished / Math.max(1, p.expected)) * 1_000)),
        { strategy: p.strategy, n: p.index + 1, count: p.count },
      ),
    stop: bar.stop,
  };
}
