import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Options of {@link TestRedis.start}.
 *
 * @example
 * await TestRedis.start({ args: ['--hz', '100'] });
 */
export interface TestRedisOptions {
  /**
   * Extra redis-server arguments, after the helper's own (port, bind, no persistence), so they may
   * override them; kept across `restart()`. Default none.
   */
  args?: readonly string[];
}

/**
 * A throw-away redis-server for one test file: its own free port, nothing persisted, stoppable and
 * restartable on the same port so tests can take Redis away mid-run. Never touches the machine's
 * shared Redis on 6379.
 */
export class TestRedis {
  #process: ChildProcess | undefined;
  readonly #dir = mkdtempSync(join(tmpdir(), 'stormguard-redis-'));

  private constructor(
    readonly port: number,
    readonly args: readonly string[],
  ) {}

  static async start(options: TestRedisOptions = {}): Promise<TestRedis> {
    const server = new TestRedis(await freePort(), [...(options.args ?? [])]);
    await server.restart();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Connection options for ioredis and BullMQ. */
  get connection(): { host: string; port: number } {
    return { host: '127.0.0.1', port: this.port };
  }

  get running(): boolean {
    return this.#process !== undefined;
  }

  /** (Re)starts the server on the same port and resolves once it accepts connections. */
  async restart(): Promise<void> {
    if (this.#process) return;
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.#dir,
        ...this.args,
      ],
      { stdio: 'ignore' },
    );
    this.#process = child;
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined;
    });
    await waitFor(
      () => canConnect(this.port),
      10_000,
      `redis-server on port ${this.port} to accept connections`,
    );
  }

  /** Stops the server (SIGKILL: like a crash) and waits until the port refuses connections. */
  async stop(): Promise<void> {
    const child = this.#process;
    if (!child) return;
    this.#process = undefined;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
    await waitFor(
      async () => !(await canConnect(this.port)),
      5_000,
      `redis-server on port ${this.port} to stop`,
    );
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** A free TCP port on 127.0.0.1, as the OS assigns one. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  server.close();
  await once(server, 'close');
  return port;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.connect(port, '127.0.0.1');
  });
}

/**
 * Polls `condition` until it holds or `timeoutMs` passes (then throws, naming what it waited for).
 * The way tests wait: on a condition with a bound, never a bare sleep.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  intervalMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
