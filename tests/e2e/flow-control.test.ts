/**
 * Flow control end to end: three worker processes, real BullMQ, a `search` dependency that is down for
 * 10 s. The same fleet runs twice on the same load: with budget and breaker only, then with flow control.
 * Redis A serves only the `index` queue and its stormguard stores (its INFO commandstats count the
 * fleet's queue work); Redis B serves a second queue, `notify`, whose `mail` dependency stays healthy.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestRedis, waitFor } from '../helpers/redis-server.js';
import type { FlowFleetSettings } from './fixtures/flow-worker.js';
import { uniqueQueue } from './harness.js';
import { RedisBreakerStore, RedisDeadLetterStore } from './stormguard.js';

const JOBS = 300;
const DOWN_MS = 10_000;
const WORKERS = 3;
/** The fixture's breaker cool-down and budget floor. */
const COOL_DOWN_MS = 2_000;
const BUDGET_FLOOR = 5;

/** The dependencies, over HTTP: `search` answers 503 while down; both count what reaches them. */
class Dependencies {
  down = false;
  retriesWhileDown = 0;
  readonly #seen = new Set<string>();
  /** When each `mail` call arrived (ms). */
  readonly mailAt: number[] = [];
  readonly server: Server;

  constructor() {
    this.server = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://localhost');
      const job = url.searchParams.get('job') ?? '';
      if (url.pathname === '/mail') {
        this.mailAt.push(Date.now());
        response.end('ok');
        return;
      }
      const retry = this.#seen.has(job);
      this.#seen.add(job);
      if (this.down) {
        if (retry) this.retriesWhileDown++;
        response.statusCode = 503;
        response.end('down');
        return;
      }
      response.end('ok');
    });
  }

  async listen(): Promise<string> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Every command Redis has served so far (INFO commandstats). */
async function commandsServed(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/calls=(\d+)/g)) total += Number(match[1]);
  return total;
}

function startWorker(settings: FlowFleetSettings): { child: ChildProcess; ready: Promise<void> } {
  const path = fileURLToPath(new URL('./fixtures/flow-worker.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', path, JSON.stringify(settings)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`flow worker exited ${code}: ${stderr}`)));
  });
  return { child, ready };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

const after = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface FleetRun {
  retriesWhileDown: number;
  commandsPerSecond: number;
  completed: number;
  deadLetters: number;
  /** `notify` jobs that reached `mail` in each whole second of the outage. */
  mailPerSecond: number[];
}

let a: TestRedis | undefined;
let b: TestRedis | undefined;

beforeAll(async () => {
  [a, b] = await Promise.all([
    TestRedis.start({ args: ['--hz', '100'] }),
    TestRedis.start({ args: ['--hz', '100'] }),
  ]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

/** One run of the fleet: JOBS index jobs queued while search is down for DOWN_MS, then recovered. */
async function runFleet(mode: 'on' | 'off'): Promise<FleetRun> {
  if (!a || !b) throw new Error('the Redis servers did not start');
  const dependencies = new Dependencies();
  const url = await dependencies.listen();
  const settings: FlowFleetSettings = {
    mode,
    redisA: a.connection,
    redisB: b.connection,
    prefix: uniqueQueue(`flow-${mode}`),
    indexQueue: uniqueQueue('index'),
    notifyQueue: uniqueQueue('notify'),
    url,
  };
  const redisA = new Redis(a.connection);
  const index = new Queue(settings.indexQueue, { connection: a.connection });
  const notify = new Queue(settings.notifyQueue, { connection: b.connection });
  const workers = Array.from({ length: WORKERS }, () => startWorker(settings));
  let producing: NodeJS.Timeout | undefined;
  try {
    await Promise.all(workers.map((w) => w.ready));
    let notified = 0;
    producing = setInterval(() => {
      notified++;
      void notify.add('notify', { n: notified });
    }, 50);
    dependencies.down = true;
    const downAt = Date.now();
    await index.addBulk(Array.from({ length: JOBS }, (_, n) => ({ name: 'index', data: { n } })));
    // Measured from the moment the fleet's breaker for search has opened (read from its store).
    const breakers = new RedisBreakerStore({ redis: redisA, prefix: settings.prefix });
    await waitFor(
      async () => (await breakers.list()).some((b) => b.dependency === 'search' && b.state !== 'closed'),
      DOWN_MS,
      "search's breaker to open",
    );
    const before = await commandsServed(redisA);
    const measuredFrom = Date.now();
    // The outage lasts DOWN_MS: this shapes the load (it is the scenario), it synchronises nothing.
    await after(Math.max(0, downAt + DOWN_MS - Date.now()));
    const served = (await commandsServed(redisA)) - before - 1;
    const commandsPerSecond = served / ((Date.now() - measuredFrom) / 1_000);
    dependencies.down = false;
    const upAt = Date.now();
    const retriesWhileDown = dependencies.retriesWhileDown;
    await waitFor(
      async () => {
        const { completed = 0, failed = 0 } = await index.getJobCounts('completed', 'failed');
        return completed + failed === JOBS;
      },
      60_000,
      `the ${JOBS} index jobs to end`,
    );
    clearInterval(producing);
    producing = undefined;
    const mailPerSecond: number[] = [];
    for (let from = downAt; from + 1_000 <= upAt; from += 1_000)
      mailPerSecond.push(dependencies.mailAt.filter((t) => t >= from && t < from + 1_000).length);
    const deadLetters = await new RedisDeadLetterStore({ redis: redisA, prefix: settings.prefix }).count(
      settings.indexQueue,
    );
    return {
      retriesWhileDown,
      commandsPerSecond,
      completed: (await index.getJobCounts('completed')).completed ?? 0,
      deadLetters,
      mailPerSecond,
    };
  } finally {
    clearInterval(producing);
    await Promise.all(workers.map((w) => stop(w.child)));
    await Promise.all([index.close(), notify.close()]);
    await redisA.quit();
    await dependencies.close();
  }
}

describe('flow control end to end (three worker processes, real BullMQ)', () => {
  it('pauses the fleet while search is down, probes only, drains every job after recovery, and the healthy queue flows throughout', {
    timeout: 180_000,
  }, async () => {
    const baseline = await runFleet('off');
    const flow = await runFleet('on');
    process.stdout.write(
      `flow-control e2e: baseline ${JSON.stringify(baseline)}\nflow-control e2e: flow ${JSON.stringify(flow)}\n`,
    );

    // While down, only the half-open probes and the budget's floor of retries reach search.
    const probes = Math.ceil(DOWN_MS / COOL_DOWN_MS) + 1;
    expect(flow.retriesWhileDown).toBeLessThanOrEqual(probes + BUDGET_FLOOR);
    // The queue work falls to a twentieth of what budget and breaker alone cause.
    expect(flow.commandsPerSecond).toBeLessThanOrEqual(0.05 * baseline.commandsPerSecond);
    // Every job completes after recovery, without a replay.
    expect(flow.completed).toBe(JOBS);
    expect(flow.deadLetters).toBe(0);
    // The healthy queue kept completing jobs in every second of the outage.
    expect(flow.mailPerSecond.length).toBeGreaterThanOrEqual(9);
    expect(flow.mailPerSecond.every((n) => n > 0)).toBe(true);
  });
});
