/**
 * Fleet-wide limits end to end: three worker processes (tests/e2e/fixtures/limits-worker.ts), real BullMQ at
 * concurrency 50 each, against an `api` dependency over HTTP that counts its own concurrent calls and
 * records when each one starts. The limits are shared through the flow store on the run's backend (a
 * redis-server by default; a Redis Cluster or PostgreSQL with `STORMGUARD_TEST_BACKEND`), and changed by an
 * operator through the real CLI (`stormguard limits pause|resume`, the repository's build, or the installed
 * package's in a matrix cell).
 *
 * Every bound asserted is a protocol time the requirement names (the lease, `stateCacheMs`, Retry-After,
 * the ramp), with a stated tolerance for process scheduling on a busy machine; none is a speed.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IpcProcess } from '../helpers/ipc-process.js';
import { waitFor } from '../helpers/redis-server.js';
import { type LimitsStores, limitsStores } from './fixtures/limits-stores.js';
import type { LimitsWorkerSettings } from './fixtures/limits-worker.js';
import { TestBed, uniqueQueue } from './harness.js';

const bed = TestBed.perFile();

const WORKERS = 3;
const CONCURRENCY = 50;
const MAX_IN_FLIGHT = 25;
/** The workers' `stateCacheMs` (the default). */
const STATE_CACHE_MS = 250;
/**
 * What a call may take, on a busy 2-core machine, between the store granting its slot and the request
 * reaching the dependency (an event-loop turn of a worker running 50 jobs, the HTTP hop). The requirement's
 * bounds are `stateCacheMs` after the store knows; this is added to them, and said so in each message.
 */
const SCHEDULING_MS = 250;

/** One call as the dependency saw it: when it arrived and ended (local clock, ms), from which worker. */
interface Call {
  atMs: number;
  endMs: number | undefined;
  worker: number;
  status: number;
}

/** How the dependency answers a call: a status and headers, or `hang` (no answer until released). */
type Answer = { status: number; headers?: Record<string, string> } | 'hang';

/**
 * The `api` dependency over HTTP: answers each call after `answerMs` (as `answer` decides), counts the
 * calls running at once (from arrival until the answer is sent or the caller's connection closes), per
 * worker too, and keeps every call.
 */
class Api {
  readonly calls: Call[] = [];
  running = 0;
  maxRunning = 0;
  readonly runningBy = new Map<number, number>();
  /** Calls answered 'hang' and still open. */
  hungOpen = 0;
  answerMs = 20;
  answer: (call: Call, index: number) => Answer = () => ({ status: 200 });
  readonly #hung = new Set<() => void>();
  readonly #server: Server = createServer((request, response) => this.#serve(request, response));

  async listen(): Promise<string> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/api`;
  }

  /** Answers every hung call now (200). */
  release(): void {
    for (const answer of [...this.#hung]) answer();
  }

  /** Calls that arrived at or after `fromMs` and before `toMs`. */
  between(fromMs: number, toMs: number): Call[] {
    return this.calls.filter((c) => c.atMs >= fromMs && c.atMs < toMs);
  }

  async close(): Promise<void> {
    this.release();
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #serve(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const worker = Number(url.searchParams.get('worker'));
    const call: Call = { atMs: Date.now(), endMs: undefined, worker, status: 0 };
    const index = this.calls.push(call) - 1;
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    this.runningBy.set(worker, (this.runningBy.get(worker) ?? 0) + 1);
    // Ended when the answer is sent, or when the caller's connection closes first (a killed worker).
    response.once('close', () => {
      call.endMs = Date.now();
      this.running--;
      this.runningBy.set(worker, (this.runningBy.get(worker) ?? 0) - 1);
    });
    const send = (answer: Exclude<Answer, 'hang'>) => {
      call.status = answer.status;
      response.writeHead(answer.status, answer.headers ?? {});
      response.end(answer.status === 200 ? 'ok' : 'slow down');
    };
    const answer = this.answer(call, index);
    if (answer === 'hang') {
      this.hungOpen++;
      response.once('close', () => {
        this.hungOpen--;
      });
      const later = () => {
        this.#hung.delete(later);
        if (!response.destroyed) send({ status: 200 });
      };
      this.#hung.add(later);
      return;
    }
    setTimeout(() => {
      if (!response.destroyed) send(answer);
    }, this.answerMs);
  }
}

/** The most calls that ran at once among `calls` (each from its arrival to its end). */
function mostAtOnce(calls: readonly Call[]): number {
  const edges = calls.flatMap((c) => [
    { at: c.atMs, step: 1 },
    { at: c.endMs ?? Number.POSITIVE_INFINITY, step: -1 },
  ]);
  // An end and an arrival at the same millisecond: the end first (the calls did not overlap).
  edges.sort((a, b) => a.at - b.at || a.step - b.step);
  let running = 0;
  let most = 0;
  for (const edge of edges) {
    running += edge.step;
    most = Math.max(most, running);
  }
  return most;
}

/** One fleet run: its dependency, its worker processes, its queue and stores. */
interface Fleet {
  api: Api;
  workers: IpcProcess[];
  queueName: string;
  queue: Queue;
  prefix: string;
  stores: LimitsStores;
  /** Every Retry-After hold a worker recorded: when (its clock, ms) and for how long. */
  holds: { atMs: number; forMs: number }[];
  deadLettered: string[];
}

const open: Fleet[] = [];

/**
 * BullMQ's job locks: its defaults (30 s, checked every 30 s), or shorter where a killed worker's jobs
 * must come back within the test. Not much shorter: a worker of 50 jobs on a loaded 2-core machine can
 * miss a renewal by a second or more, and a live job whose lock lapses stalls.
 */
const DEFAULT_LOCKS = { lockDuration: 30_000, stalledInterval: 30_000 };

async function startFleet(
  api: Api,
  settings: Pick<LimitsWorkerSettings, 'limits' | 'limitsOptions'> &
    Partial<Pick<LimitsWorkerSettings, 'lockDuration' | 'stalledInterval'>>,
  name: string,
): Promise<Fleet> {
  const url = await api.listen();
  const prefix = uniqueQueue(`limits-${name}`);
  const queueName = uniqueQueue(`api-${name}`);
  const stores = await limitsStores(bed.descriptor, prefix);
  const queue = bed.queue(queueName);
  const fleet: Fleet = { api, workers: [], queueName, queue, prefix, stores, holds: [], deadLettered: [] };
  open.push(fleet);
  const script = new URL('./fixtures/limits-worker.ts', import.meta.url);
  for (let worker = 0; worker < WORKERS; worker++) {
    const workerSettings: LimitsWorkerSettings = {
      descriptor: bed.descriptor,
      prefix,
      queue: queueName,
      url,
      worker,
      concurrency: CONCURRENCY,
      ...DEFAULT_LOCKS,
      ...settings,
    };
    const process = new IpcProcess(script, [JSON.stringify(workerSettings)]);
    process.on('hold', (m) => fleet.holds.push({ atMs: m.atMs as number, forMs: m.forMs as number }));
    process.on('dead-letter', (m) => fleet.deadLettered.push(m.reason as string));
    fleet.workers.push(process);
  }
  await Promise.all(fleet.workers.map((w) => w.next('ready', 60_000)));
  return fleet;
}

async function stopFleet(fleet: Fleet): Promise<void> {
  await Promise.all(fleet.workers.map((w) => w.close()));
  await fleet.stores.close();
  await fleet.api.close();
  open.splice(open.indexOf(fleet), 1);
}

afterAll(async () => {
  for (const fleet of [...open]) await stopFleet(fleet);
});

async function addJobs({ queue }: Fleet, jobs: number): Promise<void> {
  await queue.addBulk(Array.from({ length: jobs }, (_, n) => ({ name: 'call', data: { n } })));
}

/** Waits until all `jobs` of the fleet's queue have completed (or any failed), then checks none did. */
async function expectAllCompleted(fleet: Fleet, jobs: number, timeoutMs: number): Promise<void> {
  const { queue } = fleet;
  await waitFor(
    async () => {
      const { completed = 0, failed = 0 } = await queue.getJobCounts('completed', 'failed');
      return completed + failed >= jobs || fleet.deadLettered.length > 0;
    },
    timeoutMs,
    `the ${jobs} jobs to complete`,
  );
  if (fleet.deadLettered.length > 0) {
    const { records } = await fleet.stores.deadLetters.list(fleet.queueName, { limit: 1 });
    expect.fail(
      `${fleet.deadLettered.length} jobs dead-lettered (${[...new Set(fleet.deadLettered)].join(', ')}); the first: ${records[0]?.detail}`,
    );
  }
  expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: jobs, failed: 0 });
  expect(await fleet.stores.deadLetters.count(fleet.queueName)).toBe(0);
}

describe('fleet-wide limits end to end (three worker processes at concurrency 50, real BullMQ)', () => {
  it('never lets the dependency see more than maxInFlight calls at once, and a killed worker’s slots come back within the lease', {
    timeout: 90_000,
  }, async () => {
    const JOBS = 600;
    const LEASE_MS = 2_000;
    /** The calls waiting for a slot ask again every 50-100 ms (or are held ~300 ms): slack after the lease. */
    const RETURN_SLACK_MS = 1_000;
    const api = new Api();
    const fleet = await startFleet(
      api,
      {
        limits: { api: { maxInFlight: MAX_IN_FLIGHT, leaseMs: LEASE_MS } },
        // The killed worker's jobs come back within about 6 s.
        lockDuration: 5_000,
        stalledInterval: 1_000,
      },
      'in-flight',
    );
    await addJobs(fleet, JOBS);
    await waitFor(() => api.calls.length >= JOBS / 2, 30_000, 'half the calls');

    // From here the api holds every call: the fleet fills its slots with calls that stay in flight.
    api.answer = () => 'hang';
    // Calls that started before the switch end within answerMs: wait until every call in flight is held.
    await waitFor(() => api.hungOpen >= MAX_IN_FLIGHT, 10_000, `${MAX_IN_FLIGHT} calls held by the api`);
    expect(api.running, 'calls the api holds once the fleet has filled its slots').toBe(MAX_IN_FLIGHT);
    expect((await fleet.stores.flow.limitState('api')).inFlight).toBe(MAX_IN_FLIGHT);
    const [victimIndex, victimSlots] = [...api.runningBy].sort((a, b) => b[1] - a[1])[0] ?? [0, 0];
    expect(victimSlots).toBeGreaterThan(0);
    const victim = fleet.workers[victimIndex] as IpcProcess;
    const alive = () => [...api.runningBy].reduce((n, [w, r]) => (w === victimIndex ? n : n + r), 0);

    const killedAt = Date.now();
    await victim.kill();
    // The killed worker's slots lapse within the lease (renewed every leaseMs / 3 until the kill); the
    // live workers' waiting calls then take them, and the api sees MAX_IN_FLIGHT of theirs at once.
    await waitFor(
      () => alive() === MAX_IN_FLIGHT,
      LEASE_MS + RETURN_SLACK_MS,
      `the live workers to take the killed worker's ${victimSlots} slots back within the lease (${LEASE_MS} ms, + ${RETURN_SLACK_MS} ms for their next ask)`,
    );
    const returnedAfterMs = Date.now() - killedAt;
    expect((await fleet.stores.flow.limitState('api')).inFlight).toBe(MAX_IN_FLIGHT);

    api.answer = () => ({ status: 200 });
    api.release();
    // The killed worker's active jobs stall and come back to the live workers (5 s locks).
    await expectAllCompleted(fleet, JOBS, 60_000);
    process.stdout.write(
      `limits e2e in-flight: ${JSON.stringify({ calls: api.calls.length, maxRunning: api.maxRunning, victimSlots, returnedAfterMs })}\n`,
    );
    expect(api.maxRunning).toBeLessThanOrEqual(MAX_IN_FLIGHT);
    // The fleet's 150 job slots pushed against the cap: it was reached, not merely never exceeded.
    expect(api.maxRunning).toBe(MAX_IN_FLIGHT);
    await stopFleet(fleet);
  });

  it('a 429 with Retry-After: 5 holds the dependency fleet-wide until then, then one probe, then the ramp', {
    timeout: 90_000,
  }, async () => {
    const JOBS = 300;
    const BURST = 100;
    const RETRY_AFTER_S = 5;
    const SLOW_START_MS = 2_000;
    const FLOOR_PER_SECOND = 5;
    const RAMP_WINDOW_MS = 600;
    const api = new Api();
    let first429At: number | undefined;
    // The first BURST calls succeed; then 429 Retry-After: 5 for 5 s, then success again.
    api.answer = (call, index) => {
      if (index < BURST) return { status: 200 };
      first429At ??= call.atMs;
      return call.atMs < first429At + RETRY_AFTER_S * 1_000
        ? { status: 429, headers: { 'retry-after': String(RETRY_AFTER_S) } }
        : { status: 200 };
    };
    const fleet = await startFleet(
      api,
      {
        limits: { api: { maxInFlight: MAX_IN_FLIGHT } },
        limitsOptions: {
          stateCacheMs: STATE_CACHE_MS,
          slowStartMs: SLOW_START_MS,
          floorPerSecond: FLOOR_PER_SECOND,
        },
      },
      'retry-after',
    );
    await addJobs(fleet, JOBS);
    await expectAllCompleted(fleet, JOBS, 60_000);
    const state = await fleet.stores.flow.limitState('api');

    expect(first429At).toBeDefined();
    const asked = (first429At ?? 0) + RETRY_AFTER_S * 1_000;
    expect(fleet.holds.length).toBeGreaterThan(0);
    const recordedAt = Math.min(...fleet.holds.map((h) => h.atMs));
    // No call starts from stateCacheMs after the first hold was recorded until the Retry-After time.
    const quietFrom = recordedAt + STATE_CACHE_MS + SCHEDULING_MS;
    const during = api.between(quietFrom, asked);
    expect(
      during.map((c) => ({ afterHoldMs: c.atMs - recordedAt, worker: c.worker })),
      `calls during the hold, later than stateCacheMs (${STATE_CACHE_MS} ms) + ${SCHEDULING_MS} ms of scheduling after it was recorded`,
    ).toEqual([]);

    // Then probes only (the breaker's halfOpenProbes; no breaker: 1) until one succeeds...
    const recoveredAt = state.recoveredAtMs;
    expect(recoveredAt, 'the store to know when the dependency came out of the hold').toBeDefined();
    const probes = api.between(quietFrom, recoveredAt ?? 0);
    expect(probes.length).toBeGreaterThan(0);
    expect(mostAtOnce(probes), 'calls in flight at once while probing').toBe(1);

    // ...then the ramp: the rate starts at floorPerSecond and doubles 10 times over slowStartMs, so over
    // its first RAMP_WINDOW_MS at most ∫ floor · 2^(10 t / slowStartMs) dt calls start (+ the pacer's
    // first one and the probe's give-back turn). Worked out here: 5/s · (2 s / (10 ln 2)) · (2^3 - 1) ≈ 10.1.
    const k = 10 / SLOW_START_MS;
    const rampAllowance = (FLOOR_PER_SECOND / 1_000) * ((2 ** (k * RAMP_WINDOW_MS) - 1) / (k * Math.LN2)) + 2;
    const rampCalls = api.between(recoveredAt ?? 0, (recoveredAt ?? 0) + RAMP_WINDOW_MS).length;
    process.stdout.write(
      `limits e2e retry-after: ${JSON.stringify({ holds: fleet.holds.length, recordedAfter429Ms: recordedAt - (first429At ?? 0), recoveredAfterAskedMs: (recoveredAt ?? 0) - asked, probes: probes.length, rampCalls, rampAllowance })}\n`,
    );
    expect(rampCalls).toBeLessThanOrEqual(rampAllowance);
    expect(api.maxRunning).toBeLessThanOrEqual(MAX_IN_FLIGHT);
    await stopFleet(fleet);
  });

  it('stormguard limits pause stops every call to the dependency within stateCacheMs + 1 s, resume brings them back, both audited', {
    timeout: 90_000,
  }, async () => {
    /** The most jobs the producer adds: 100 a second until the operator resumes. */
    const MAX_JOBS = 1_000;
    /** How long the operator keeps the dependency paused: the scenario, not a synchronisation. */
    const PAUSED_MS = 3_500;
    const api = new Api();
    api.answerMs = 100;
    // No limits in code: the operator's pause reaches the workers through their state reads, each reused
    // for stateCacheMs.
    const fleet = await startFleet(
      api,
      { limits: {}, limitsOptions: { stateCacheMs: STATE_CACHE_MS } },
      'pause',
    );
    // Jobs keep arriving, 5 every 50 ms, until the operator has resumed: calls are due all along (the
    // production's pace shapes the load, it synchronises nothing).
    let added = 0;
    let resumedYet = false;
    const producing = (async () => {
      while (!resumedYet && added < MAX_JOBS) {
        await addJobs(fleet, 5);
        added += 5;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    await waitFor(() => api.calls.length >= 50, 30_000, 'the first 50 calls');

    const paused = await limitsCli(fleet, 'pause', 'api', '--reason', 'vendor incident: 429s since 14:00');
    const pausedAt = paused.state.override?.setAtMs ?? Number.NaN;
    expect(paused.state.override?.paused).toBe(true);
    const status = await limitsCli(fleet, 'status', 'api');
    expect(status.dependencies).toMatchObject([{ dependency: 'api', override: { paused: true } }]);
    // The operator keeps it paused for PAUSED_MS.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, pausedAt + PAUSED_MS - Date.now())));
    const addedWhilePaused = added;
    const resumed = await limitsCli(fleet, 'resume', 'api', '--reason', 'vendor incident over');
    resumedYet = true;
    await producing;
    const resumedAt = resumed.state.nowMs;
    expect(resumed.state.override?.paused).toBeUndefined();

    const late = api.between(pausedAt + STATE_CACHE_MS + 1_000, resumedAt);
    expect(
      late.map((c) => ({ afterPauseMs: c.atMs - pausedAt, worker: c.worker })),
      `calls later than stateCacheMs (${STATE_CACHE_MS} ms) + 1 s after the pause`,
    ).toEqual([]);
    await expectAllCompleted(fleet, added, 60_000);
    const beforePause = api.between(0, pausedAt);
    const afterResume = api.between(resumedAt, Number.POSITIVE_INFINITY).length;
    process.stdout.write(
      `limits e2e pause: ${JSON.stringify({ added, addedWhilePaused, beforePause: beforePause.length, lastCallAfterPauseMs: Math.max(...api.between(0, resumedAt).map((c) => c.atMs)) - pausedAt, pausedForMs: resumedAt - pausedAt, afterResume })}\n`,
    );
    // The jobs added while paused were held, not lost: they reach the api after the resume.
    expect(afterResume).toBeGreaterThan(0);

    const { entries } = await fleet.stores.audit.list({ limit: 10 });
    expect(
      entries.map(({ action, target, reason, by }) => ({ action, target, reason, by })).reverse(),
    ).toEqual([
      { action: 'limits.pause', target: 'api', reason: 'vendor incident: 429s since 14:00', by: OPERATOR },
      { action: 'limits.resume', target: 'api', reason: 'vendor incident over', by: OPERATOR },
    ]);
    await stopFleet(fleet);
  });
});

const OPERATOR = 'e2e-operator';

/** The limits state a CLI change or status prints with --json. */
interface CliLimitState {
  nowMs: number;
  override?: { paused?: boolean; setAtMs: number };
}

/** Runs `stormguard limits <action> [dependency] ...args --json` against the fleet's store, and parses its output. */
async function limitsCli(
  fleet: Fleet,
  action: 'pause' | 'resume',
  ...args: string[]
): Promise<{ state: CliLimitState }>;
async function limitsCli(
  fleet: Fleet,
  action: 'status',
  ...args: string[]
): Promise<{ dependencies: unknown[] }>;
async function limitsCli(fleet: Fleet, action: string, ...args: string[]): Promise<unknown> {
  const by = action === 'status' ? [] : ['--by', OPERATOR];
  const argv = ['limits', action, ...args, ...by, ...backendFlags(), '--prefix', fleet.prefix, '--json'];
  try {
    const { stdout } = await run(process.execPath, [cliEntry(), ...argv], { maxBuffer: 1 << 20 });
    return JSON.parse(stdout);
  } catch (error) {
    const e = error as { code?: unknown; stdout?: string; stderr?: string };
    throw new Error(
      `stormguard ${argv.join(' ')} exited ${String(e.code)}: ${e.stderr ?? ''}${e.stdout ?? ''}`,
    );
  }
}

const run = promisify(execFile);

/**
 * The CLI as users run it: the `stormguard` package's bin, resolved by name (in this repository, its
 * own build; in a matrix cell, the installed package).
 */
function cliEntry(): string {
  const manifest = createRequire(import.meta.url).resolve('stormguard/package.json');
  return join(dirname(manifest), 'dist', 'cli', 'main.js');
}

/** The CLI's flags naming the bed's backend. */
function backendFlags(): string[] {
  const { descriptor } = bed;
  if (descriptor.backend === 'postgres') {
    const connection = descriptor.connection as { connectionString: string };
    return ['--postgres', connection.connectionString];
  }
  if (descriptor.backend === 'cluster') {
    const [node] = descriptor.connection as { host: string; port: number }[];
    return ['--redis', `redis://${node?.host}:${node?.port}`];
  }
  return ['--redis', bed.server.url];
}

beforeAll(() => {
  // The CLI must be there before the fleet runs: in this repository the global setup builds it.
  cliEntry();
});
