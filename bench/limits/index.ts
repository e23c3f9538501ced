/**
 * Fleet-wide limits under load: 8 worker processes (each its own Node process with one stormguard worker at
 * concurrency 50) on one redis-server, 5 000 jobs per run, each job one call to an `api` dependency over
 * HTTP that answers after `--call-ms` and counts its own concurrent calls. The same fleet runs the same jobs
 * with `limits: { api: { maxInFlight: 25 } }`, with a `maxInFlight` as high as the fleet's job slots (never
 * reached: the cost of limits on the success path, without waits) and without limits, alternated round by
 * round (the order reversed every other round). Prints per side: the most calls the dependency saw at once (with limits: the cap, held exactly),
 * jobs per second, the Redis commands per call (INFO commandstats deltas on the bench's own redis-server,
 * commands inside Lua scripts included) and the extra per call with limits by command, the limits store's
 * round trips per call (counted in the workers: each exchange or state read is one), and the workers' CPU
 * µs per job (user + system, summed over the processes).
 *
 *   npx tsx bench/limits/index.ts [--jobs 5000] [--rounds 3] [--processes 8] [--concurrency 50]
 *     [--max-in-flight 25] [--call-ms 10] [--quick] [--json]
 *
 * `--quick`: 1 000 jobs, one round. Progress goes to stderr; the table (or `--json`) to stdout.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { IpcProcess, nowMs } from '../../tests/helpers/ipc-process.js';
import { formatTable, median } from '../common.js';
import { commandTotal, connect, difference, type RedisTarget, startTarget } from '../redis-target.js';
import type { LimitsRun } from './worker-process.js';

/**
 * `limited`: maxInFlight (25), far below the fleet's job slots; `uncapped`: a maxInFlight as high as the
 * fleet's job slots, never reached (what limits cost on the success path, without waits); `unlimited`: no
 * limits.
 */
type Side = 'limited' | 'uncapped' | 'unlimited';
const SIDES: Side[] = ['limited', 'uncapped', 'unlimited'];

interface Measurement {
  jobsPerSecond: number;
  /** The most calls the dependency saw running at once. */
  maxInFlightSeen: number;
  calls: number;
  commandsPerCall: number;
  commands: Record<string, number>;
  /** The limits store's round trips (exchanges and state reads) per call. */
  limitRoundTripsPerCall: number;
  workerCpuMicrosPerJob: number;
}

interface SideFigures {
  /** The most calls at once over every round. */
  maxInFlightSeen: number;
  jobsPerSecond: number;
  commandsPerCall: number;
  limitRoundTripsPerCall: number;
  workerCpuMicrosPerJob: number;
}

/** The dependency: answers each call after `callMs`, and counts the calls running at once. */
class Api {
  running = 0;
  maxRunning = 0;
  calls = 0;
  readonly #server: Server;

  constructor(callMs: number) {
    this.#server = createServer((_request, response) => {
      this.calls++;
      this.running++;
      this.maxRunning = Math.max(this.maxRunning, this.running);
      response.once('close', () => this.running--);
      setTimeout(() => response.end('ok'), callMs);
    });
  }

  async listen(): Promise<string> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/api`;
  }

  reset(): void {
    this.maxRunning = this.running;
    this.calls = 0;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

const options = args();
let runCount = 0;

async function measure(
  target: RedisTarget,
  fleet: IpcProcess[],
  api: Api,
  url: string,
  side: Side,
  jobs: number,
): Promise<Measurement> {
  const n = runCount++;
  const queueName = `limits-${side}-${n}`;
  const producer = connect(target.address);
  const queue = new Queue(queueName, { connection: producer });
  for (let i = 0; i < jobs; i += 1_000)
    await queue.addBulk(
      Array.from({ length: Math.min(1_000, jobs - i) }, (_, j) => ({
        name: 'call',
        data: { i: i + j },
        opts: { removeOnComplete: true },
      })),
    );
  const run: LimitsRun = {
    queue: queueName,
    prefix: `bench-limits-${n}`,
    maxInFlight:
      side === 'limited'
        ? options.maxInFlight
        : side === 'uncapped'
          ? options.processes * options.concurrency
          : undefined,
    concurrency: options.concurrency,
    url,
  };
  await Promise.all(fleet.map((p) => p.request({ type: 'start', run }, 'ready')));
  const done = new Array<number>(fleet.length).fill(0);
  let finished: () => void = () => {};
  const allDone = new Promise<void>((resolve) => {
    finished = resolve;
  });
  fleet.forEach((p, i) => {
    p.on('progress', (message) => {
      done[i] = message.completed as number;
      if (done.reduce((a, b) => a + b, 0) >= jobs) finished();
    });
  });
  api.reset();
  const before = await target.counters();
  const startedAt = nowMs();
  for (const p of fleet) p.send({ type: 'go' });
  await Promise.race([
    allDone,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`${jobs} ${side} jobs did not end in 10 minutes`)), 600_000).unref(),
    ),
  ]);
  const stopped = await Promise.all(fleet.map((p) => p.request({ type: 'stop' }, 'stopped')));
  const used = difference(before, await target.counters());
  const endedAt = Math.max(...stopped.map((s) => s.lastCompletedAt as number));
  const roundTrips = stopped.reduce((sum, s) => {
    const calls = s.storeCalls as Record<string, number>;
    return sum + Object.values(calls).reduce((a, b) => a + b, 0);
  }, 0);
  const calls = api.calls;
  await queue.obliterate({ force: true });
  await queue.close();
  producer.disconnect();
  return {
    jobsPerSecond: jobs / ((endedAt - startedAt) / 1_000),
    maxInFlightSeen: api.maxRunning,
    calls,
    commandsPerCall: commandTotal(used) / calls,
    commands: used.commands,
    limitRoundTripsPerCall: roundTrips / calls,
    workerCpuMicrosPerJob: stopped.reduce((sum, s) => sum + (s.cpuMicros as number), 0) / jobs,
  };
}

function figures(runs: Measurement[]): SideFigures {
  const of = (key: Exclude<keyof SideFigures, 'maxInFlightSeen'>) => median(runs.map((r) => r[key]));
  return {
    maxInFlightSeen: Math.max(...runs.map((r) => r.maxInFlightSeen)),
    jobsPerSecond: Math.round(of('jobsPerSecond')),
    commandsPerCall: Number(of('commandsPerCall').toFixed(2)),
    limitRoundTripsPerCall: Number(of('limitRoundTripsPerCall').toFixed(3)),
    workerCpuMicrosPerJob: Math.round(of('workerCpuMicrosPerJob')),
  };
}

const loadBefore = loadavg();
process.stderr.write(`starting a redis-server and ${options.processes} worker processes\n`);
const target = await startTarget('redis');
const api = new Api(options.callMs);
const url = await api.listen();
const fleet = Array.from(
  { length: options.processes },
  () => new IpcProcess(new URL('./worker-process.ts', import.meta.url), [JSON.stringify(target.address)]),
);
const results: Record<Side, Measurement[]> = { limited: [], uncapped: [], unlimited: [] };
try {
  await Promise.all(fleet.map((p) => p.next('up')));
  // Warm-up, discarded: the first runs pay for JIT compilation in every process.
  for (const side of SIDES) {
    process.stderr.write(`warm-up: ${side}\n`);
    await measure(target, fleet, api, url, side, Math.min(options.jobs, 1_000));
  }
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? SIDES : [...SIDES].reverse();
    for (const side of order) {
      const m = await measure(target, fleet, api, url, side, options.jobs);
      results[side].push(m);
      process.stderr.write(
        `round ${round + 1}/${options.rounds} ${side}: ${Math.round(m.jobsPerSecond)} jobs/s, at most ${m.maxInFlightSeen} calls at once, ${m.commandsPerCall.toFixed(2)} Redis commands and ${m.limitRoundTripsPerCall.toFixed(3)} limits round trips per call, ${Math.round(m.workerCpuMicrosPerJob)} worker CPU µs per job\n`,
      );
    }
  }
} finally {
  await Promise.all(fleet.map((p) => p.close()));
  await api.close();
  await target.close();
}
const loadAfter = loadavg();

const limited = figures(results.limited);
const uncapped = figures(results.uncapped);
const unlimited = figures(results.unlimited);
/** What limits add per call over no limits, by Redis command (median rounds; shown from 0.005 per call). */
function extraByCommand(side: Side): Record<string, number> {
  const extra: Record<string, number> = {};
  for (const name of new Set(results[side].flatMap((r) => Object.keys(r.commands)))) {
    const perCall = (r: Measurement) => (r.commands[name] ?? 0) / r.calls;
    const delta = median(results[side].map(perCall)) - median(results.unlimited.map(perCall));
    if (Math.abs(delta) >= 0.005) extra[name] = Number(delta.toFixed(3));
  }
  return extra;
}
const capHeld = limited.maxInFlightSeen === options.maxInFlight;
const summary = {
  jobs: options.jobs,
  rounds: options.rounds,
  processes: options.processes,
  concurrency: options.concurrency,
  maxInFlight: options.maxInFlight,
  callMs: options.callMs,
  server: target.server,
  loadAverage: {
    before: loadBefore.map((l) => Number(l.toFixed(2))),
    after: loadAfter.map((l) => Number(l.toFixed(2))),
  },
  capHeld,
  limited,
  uncapped,
  unlimited,
  extraCommandsPerCall: {
    limited: Number((limited.commandsPerCall - unlimited.commandsPerCall).toFixed(2)),
    uncapped: Number((uncapped.commandsPerCall - unlimited.commandsPerCall).toFixed(2)),
  },
  extraByCommand: { limited: extraByCommand('limited'), uncapped: extraByCommand('uncapped') },
};

if (options.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
else {
  const { jobs, rounds, processes, concurrency, maxInFlight, callMs } = options;
  process.stdout.write(
    `${processes} processes × concurrency ${concurrency}, ${jobs} jobs per run (one ${callMs} ms call each), median of ${rounds} alternated round(s); ${target.server}; load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')} before, ${loadAfter.map((l) => l.toFixed(2)).join(' ')} after\n\n`,
  );
  const row = (label: string, f: SideFigures) => [
    label,
    String(f.maxInFlightSeen),
    String(f.jobsPerSecond),
    f.commandsPerCall.toFixed(2),
    f.limitRoundTripsPerCall.toFixed(3),
    String(f.workerCpuMicrosPerJob),
  ];
  const header = [
    '',
    'most calls at once',
    'jobs/s',
    'Redis cmds/call',
    'limits round trips/call',
    'worker CPU µs/job',
  ];
  process.stdout.write(
    `${formatTable([
      header,
      row(`maxInFlight ${maxInFlight}`, limited),
      row(`maxInFlight ${processes * concurrency} (never reached)`, uncapped),
      row('no limits', unlimited),
    ])}\n\n`,
  );
  const extra = (side: 'limited' | 'uncapped') =>
    `${summary.extraCommandsPerCall[side]} (${Object.entries(summary.extraByCommand[side])
      .map(([name, n]) => `${name} ${n}`)
      .join(', ')})`;
  process.stdout.write(
    `cap held exactly: ${capHeld ? 'yes' : 'NO'} (most at once ${limited.maxInFlightSeen}, cap ${maxInFlight})\n` +
      `extra Redis commands per call, maxInFlight ${maxInFlight}: ${extra('limited')}\n` +
      `extra Redis commands per call, maxInFlight never reached: ${extra('uncapped')}\n`,
  );
}
if (!capHeld) process.exitCode = 1;

/** The command line; a bad value names the options, exit 2. */
function args() {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string' },
      rounds: { type: 'string' },
      processes: { type: 'string', default: '8' },
      concurrency: { type: 'string', default: '50' },
      'max-in-flight': { type: 'string', default: '25' },
      'call-ms': { type: 'string', default: '10' },
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const jobs = Number(values.jobs ?? (values.quick ? 1_000 : 5_000));
  const rounds = Number(values.rounds ?? (values.quick ? 1 : 3));
  const processes = Number(values.processes);
  const concurrency = Number(values.concurrency);
  const maxInFlight = Number(values['max-in-flight']);
  const callMs = Number(values['call-ms']);
  const whole = (n: number, min: number) => Number.isInteger(n) && n >= min;
  if (
    !whole(jobs, 1) ||
    !whole(rounds, 1) ||
    !whole(processes, 1) ||
    processes > 64 ||
    !whole(concurrency, 1) ||
    !whole(maxInFlight, 1) ||
    !whole(callMs, 0)
  ) {
    process.stderr.write(
      '--jobs, --rounds, --concurrency and --max-in-flight must be whole numbers >= 1, --processes one from 1 to 64, --call-ms a whole number of ms >= 0\n',
    );
    process.exit(2);
  }
  return { jobs, rounds, processes, concurrency, maxInFlight, callMs, json: values.json === true };
}
