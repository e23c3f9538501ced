import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { runServerBinary, serverFolder } from './postgres-binaries.js';
import { freePort, waitFor } from './redis-server.js';

export { postgresBinDir } from './postgres-binaries.js';

/**
 * Options of {@link TestPostgres.start}.
 *
 * @example
 * await TestPostgres.start({ parent: runDir, settings: { max_connections: '50' } });
 */
export interface TestPostgresOptions {
  /** Folder the server's own temporary folder is created in. Default the OS temporary folder. */
  parent?: string;
  /** Extra server settings (`-c name=value`), after the helper's fast ones, so they may override them. */
  settings?: Readonly<Record<string, string>>;
}

/**
 * Settings for a throw-away server: nothing waits for the disk, little memory, enough connections.
 * `synchronous_commit` stays on: with fsync off a commit costs one write(2), and a server that `stop()`
 * kills must come back with every commit it acknowledged (off, recent commits vanish at the restart).
 */
const FAST_SETTINGS: Readonly<Record<string, string>> = {
  fsync: 'off',
  full_page_writes: 'off',
  shared_buffers: '32MB',
  max_connections: '200',
  max_locks_per_transaction: '256',
  log_min_messages: 'warning',
};

/** A database of its own on a {@link TestPostgres}: a file's or a test's isolation. */
export interface TestDatabase {
  /** The database's name (unique on its server). */
  readonly name: string;
  /** A connection string for it (`postgres://postgres@127.0.0.1:<port>/<name>`). */
  readonly url: string;
  /** Drops it, ending every session still connected to it. */
  drop(): Promise<void>;
}

/**
 * A throw-away PostgreSQL for tests and benchmarks: `initdb` into a temporary folder (owned by the
 * `postgres` user when running as root), a free loopback port, the unix socket in that folder, fsync
 * off; stoppable (like a crash) and restartable on the same port so tests can take the database away
 * mid-run; `close()` removes everything. Never touches the machine's shared PostgreSQL on 5432.
 *
 * Fails with a message naming Debian's `postgresql` package when the server binaries are missing.
 *
 * @example
 * const server = await TestPostgres.start();
 * const db = await server.createDatabase();
 * const pool = new pg.Pool({ connectionString: db.url });
 * // ...
 * await pool.end();
 * await server.close();
 */
export class TestPostgres {
  #running = false;

  private constructor(
    readonly port: number,
    /** The server's temporary folder: data directory, log and unix socket. */
    readonly dir: string,
    readonly settings: Readonly<Record<string, string>>,
  ) {}

  /** Creates a cluster in a fresh temporary folder and starts it. */
  static async start(options: TestPostgresOptions = {}): Promise<TestPostgres> {
    const dir = serverFolder(options.parent ?? tmpdir(), 'stormguard-postgres-');
    const server = new TestPostgres(await freePort(), dir, { ...FAST_SETTINGS, ...options.settings });
    try {
      await runServerBinary('initdb', [
        '--pgdata',
        server.#dataDir,
        '--auth',
        'trust',
        '--username',
        'postgres',
        '--encoding',
        'UTF8',
        '--locale',
        'C',
        '--no-sync',
        '--no-instructions',
      ]);
      await server.restart();
    } catch (error) {
      await server.close();
      throw error;
    }
    return server;
  }

  /** Reattaches to a server another process started (see `tests/helpers/postgres-bed.ts`). */
  static attach(port: number, dir: string): TestPostgres {
    const server = new TestPostgres(port, dir, FAST_SETTINGS);
    server.#running = true;
    return server;
  }

  get #dataDir(): string {
    return join(this.dir, 'data');
  }

  /** A connection string for `database` (default `postgres`) over TCP on 127.0.0.1. */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** The folder holding the server's unix socket (`.s.PGSQL.<port>`). */
  get socketDir(): string {
    return this.dir;
  }

  get running(): boolean {
    return this.#running;
  }

  /** (Re)starts the server on the same port and resolves once it accepts connections. */
  async restart(): Promise<void> {
    if (this.#running) return;
    const settings = {
      ...this.settings,
      port: String(this.port),
      listen_addresses: '127.0.0.1',
      unix_socket_directories: this.dir,
    };
    const serverArgs = Object.entries(settings)
      .map(([name, value]) => `-c ${name}=${value}`)
      .join(' ');
    await runServerBinary('pg_ctl', [
      '--pgdata',
      this.#dataDir,
      '--log',
      join(this.dir, 'server.log'),
      '--wait',
      '--timeout',
      '30',
      '-o',
      serverArgs,
      'start',
    ]);
    this.#running = true;
  }

  /** Stops the server as a crash would (immediate shutdown) and waits until it is gone. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    await stopCluster(this.#dataDir);
  }

  /** Stops the server and removes its folder. */
  async close(): Promise<void> {
    await this.stop().catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * Creates a database of its own (a unique name, or `name`). Cheap enough for one per test file;
   * for one per test, prefer a fresh schema in the file's database.
   */
  async createDatabase(name = `stormguard_${randomBytes(6).toString('hex')}`): Promise<TestDatabase> {
    const url = this.url(name);
    await this.#admin(`CREATE DATABASE ${quoteIdentifier(name)} TEMPLATE template0`);
    return {
      name,
      url,
      drop: () => this.#drop(name),
    };
  }

  /**
   * Drops a database once its last connection has gone. A client that is still closing when FORCE ends its
   * session gets "terminating connection due to administrator command" with nobody listening, which
   * surfaces as an uncaught error in whatever test file runs next; so the drop waits (bounded) for the
   * closes it follows to finish, and forces only a connection that is still open after that (a real leak).
   */
  async #drop(name: string): Promise<void> {
    const client = new pg.Client({ connectionString: this.url() });
    await client.connect();
    try {
      const connected = async () =>
        (
          await client.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
            [name],
          )
        ).rows[0]?.n ?? 0;
      await waitFor(
        async () => (await connected()) === 0,
        5_000,
        `the connections to ${name} to close`,
      ).catch(() => undefined);
      await client.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(name)} WITH (FORCE)`);
    } finally {
      await client.end();
    }
  }

  async #admin(sql: string): Promise<void> {
    const client = new pg.Client({ connectionString: this.url() });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  }
}

/** Stops the cluster in `dataDir` (immediate shutdown) if its postmaster is still running. */
export async function stopCluster(dataDir: string): Promise<void> {
  if (!existsSync(join(dataDir, 'postmaster.pid'))) return;
  await runServerBinary('pg_ctl', ['--pgdata', dataDir, '--mode', 'immediate', '--wait', 'stop']);
}

/** A unique, valid schema name for one test's isolation (`sg_<12 hex>`). */
export function uniqueSchema(prefix = 'sg'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** Double-quotes a SQL identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
