/**
 * Live pages that stop reading: the console (`sse-console.ts`, a process of its own over a Redis fleet)
 * with `clients` live streams open on raw sockets, `stalled` of which never read a byte. Every second it
 * samples the console's RSS and heap, what waits in its memory for each client, and the machine's TCP
 * buffer memory (the kernel's share, from /proc/net/sockstat). Run once with the console's limit and once
 * without it (the baseline), each in a fresh console process.
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import type { Redis } from 'ioredis';
import { RetryBudget } from '../../src/budget/retry-budget.js';
import { RedisBudgetStore } from '../../src/redis/budget-store.js';
import { IpcProcess } from '../../tests/helpers/ipc-process.js';
import { seedRedis } from './seed-redis.js';

export interface SseOptions {
  seconds: number;
  clients: number;
  stalled: number;
  /** Dependencies with budget state: the overview's size grows with them. */
  dependencies: number;
  /** The console's update interval, ms (2 000 by default in production: shorter, to fill buffers sooner). */
  intervalMs: number;
}

/** One second of a run. */
export interface SseSample {
  atS: number;
  rssMiB: number;
  heapUsedMiB: number;
  /** Buffers outside the heap (external, array buffers included), MiB. */
  externalMiB: number;
  /** Live streams open on the console. */
  open: number;
  dropped: number;
  /** The most waiting for any stalled client, and for any reading client, bytes. */
  stalledMaxBytes: number;
  readerMaxBytes: number;
  /** Waiting for all stalled clients together, bytes. */
  stalledTotalBytes: number;
  /** The machine's TCP buffer memory (all sockets, the kernel's), MiB. */
  kernelTcpMiB: number;
}

export interface SseRun {
  limit: 'on' | 'off';
  overviewBytes: number;
  samples: SseSample[];
  /** What waited for each stalled client when it was disconnected, bytes, and when (s after opening). */
  drops: { bufferedBytes: number; atS: number }[];
  /** Updates each reading client received: fewest and most. */
  readerUpdates: { min: number; max: number };
  /** Reading clients the console disconnected (should be none). */
  readersDropped: number;
}

/** Both runs, the limit first. */
export async function measureSse(redis: Redis, redisUrl: string, options: SseOptions): Promise<SseRun[]> {
  const prefix = 'sse';
  await seedRedis(redis, prefix, 'index', 1_000);
  const budget = new RetryBudget({ store: new RedisBudgetStore({ redis, prefix }) });
  for (let i = 0; i < options.dependencies; i++) {
    const dependency = `dependency-${String(i).padStart(3, '0')}`;
    budget.recordSuccess(dependency, 100);
    await budget.trySpend(dependency);
  }
  await budget.close();
  const runs: SseRun[] = [];
  for (const limit of ['on', 'off'] as const) runs.push(await run(redisUrl, prefix, limit, options));
  return runs;
}

async function run(url: string, prefix: string, limit: 'on' | 'off', options: SseOptions): Promise<SseRun> {
  const consoleProcess = new IpcProcess(new URL('./sse-console.ts', import.meta.url), [
    url,
    prefix,
    String(options.intervalMs),
    limit === 'on' ? '1048576' : 'off',
  ]);
  const clients: LiveClient[] = [];
  try {
    const { port } = (await consoleProcess.next('ready', 60_000)) as unknown as { port: number };
    const drops: { bufferedBytes: number; atS: number }[] = [];
    const started = performance.now();
    const elapsed = () => (performance.now() - started) / 1000;
    consoleProcess.on('dropped', (message) => {
      const event = message.event as { bufferedBytes: number };
      drops.push({ bufferedBytes: event.bufferedBytes, atS: Number(elapsed().toFixed(1)) });
    });
    for (let i = 0; i < options.clients; i++) clients.push(new LiveClient(port, i >= options.stalled));
    await Promise.all(clients.map((c) => c.connected));
    const stalledPorts = new Set(clients.filter((c) => !c.reading).map((c) => c.localPort));
    const samples: SseSample[] = [];
    const readerPeak = new Map<number, number>();
    for (let second = 1; second <= options.seconds; second++) {
      await new Promise((resolve) => setTimeout(resolve, started + second * 1000 - performance.now()));
      const sample = (await consoleProcess.request({ type: 'sample' }, 'sample', 30_000)) as unknown as {
        memory: NodeJS.MemoryUsage;
        buffered: Record<string, number>;
      };
      const entries = Object.entries(sample.buffered).map(([p, bytes]) => [Number(p), bytes] as const);
      const stalled = entries.filter(([p]) => stalledPorts.has(p)).map(([, bytes]) => bytes);
      const readers = entries.filter(([p]) => !stalledPorts.has(p));
      for (const [p, bytes] of readers) readerPeak.set(p, Math.max(readerPeak.get(p) ?? 0, bytes));
      samples.push({
        atS: Math.round(elapsed()),
        rssMiB: mib(sample.memory.rss),
        heapUsedMiB: mib(sample.memory.heapUsed),
        externalMiB: mib(sample.memory.external + sample.memory.arrayBuffers),
        open: entries.length,
        dropped: drops.length,
        stalledMaxBytes: Math.max(0, ...stalled),
        readerMaxBytes: Math.max(0, ...readers.map(([, bytes]) => bytes)),
        stalledTotalBytes: stalled.reduce((a, b) => a + b, 0),
        kernelTcpMiB: kernelTcpMiB(),
      });
    }
    const readers = clients.filter((c) => c.reading);
    const updates = readers.map((c) => c.updates);
    return {
      limit,
      overviewBytes: Math.max(...clients.map((c) => c.largestUpdate)),
      samples,
      drops,
      readerUpdates: { min: Math.min(...updates), max: Math.max(...updates) },
      readersDropped: readers.filter((c) => c.closed).length,
    };
  } finally {
    for (const client of clients) client.socket.destroy();
    await consoleProcess.close();
  }
}

/** A live client on a raw socket; one that does not read never takes a byte off it. */
class LiveClient {
  readonly socket: Socket;
  readonly connected: Promise<void>;
  updates = 0;
  largestUpdate = 0;
  closed = false;
  #tail = '';

  constructor(
    port: number,
    readonly reading: boolean,
  ) {
    this.socket = connect(port, '127.0.0.1');
    this.connected = new Promise((resolve) => this.socket.once('connect', () => resolve()));
    this.socket.write(
      `GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`,
    );
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
    });
    if (!reading) {
      this.socket.pause();
      return;
    }
    this.socket.on('data', (chunk: Buffer) => {
      // Split on the blank line that ends each event; the last piece may be half an event.
      const parts = (this.#tail + chunk.toString('latin1')).split('\n\n');
      this.#tail = parts.pop() ?? '';
      for (const part of parts)
        if (part.includes('event: overview\n')) {
          this.updates++;
          this.largestUpdate = Math.max(this.largestUpdate, part.length);
        }
    });
  }

  get localPort(): number {
    return this.socket.localPort ?? -1;
  }
}

function mib(bytes: number): number {
  return Number((bytes / 2 ** 20).toFixed(1));
}

/** The machine's TCP buffer memory: /proc/net/sockstat's "TCP: … mem <pages>" (4 KiB pages). */
function kernelTcpMiB(): number {
  try {
    const pages = /TCP:.*\bmem (\d+)/.exec(readFileSync('/proc/net/sockstat', 'utf8'))?.[1];
    return pages === undefined ? -1 : mib(Number(pages) * 4096);
  } catch {
    return -1;
  }
}
