import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, waitFor } from './redis-server.js';

const run = promisify(execFile);

/** Debian installs the server in /usr/sbin, which a non-root PATH often lacks. */
const SEARCH_DIRS = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/bin'];

/** How long a fresh server may take to accept connections. */
const START_TIMEOUT_MS = 30_000;

/**
 * Settings for a throw-away server: no binary log, small buffers, nothing waits for the disk, a short lock
 * wait so lock timeouts come quickly.
 */
const FAST_ARGS = [
  '--skip-log-bin',
  '--skip-name-resolve',
  '--innodb-buffer-pool-size=16M',
  '--innodb-log-file-size=8M',
  '--innodb-flush-log-at-trx-commit=0',
  '--innodb-lock-wait-timeout=1',
];

/** The path of `binary`, or a message saying what to install: a missing server is a failing test. */
function findBinary(binary: string): string {
  const found = SEARCH_DIRS.map((dir) => join(dir, binary)).find((path) => existsSync(path));
  if (!found) {
    throw new Error(
      `MariaDB's \`${binary}\` not found on PATH or in /usr/sbin: install Debian's \`mariadb-server\` ` +
        'package (apt-get install mariadb-server)',
    );
  }
  return found;
}

/**
 * A throw-away MariaDB for one test file: `mariadb-install-db` into a temporary folder, `mariadbd` on a
 * free loopback port with its unix socket in that folder, run as the `mysql` user (it refuses root
 * otherwise); `close()` stops it and removes everything. Never touches the machine's shared server on
 * 3306. Connect as `root` (no password) over TCP.
 *
 * @example
 * const server = await TestMariadb.start();
 * const connection = await mysql.createConnection(server.connection);
 * // ...
 * await server.close();
 */
export class TestMariadb {
  #process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    /** The server's temporary folder: data directory, error log and unix socket. */
    readonly dir: string,
  ) {}

  /** Creates a data directory in a fresh temporary folder and starts a server on it. */
  static async start(): Promise<TestMariadb> {
    const installDb = findBinary('mariadb-install-db');
    const mariadbd = findBinary('mariadbd');
    const dir = mkdtempSync(join(tmpdir(), 'stormguard-mariadb-'));
    const server = new TestMariadb(await freePort(), dir);
    try {
      if (process.getuid?.() === 0) chownSync(dir, ...mysqlUser());
      await run(installDb, [
        '--no-defaults',
        `--datadir=${server.#dataDir}`,
        '--user=mysql',
        '--skip-test-db',
        '--auth-root-authentication-method=normal',
      ]);
      server.#spawn(mariadbd);
      await waitFor(() => server.#ready(), START_TIMEOUT_MS, `mariadbd on port ${server.port} to start`);
    } catch (error) {
      await server.close();
      throw error;
    }
    return server;
  }

  get #dataDir(): string {
    return join(this.dir, 'data');
  }

  /** Connection options for mysql2 (`root` over TCP on 127.0.0.1). */
  get connection(): { host: string; port: number; user: string } {
    return { host: '127.0.0.1', port: this.port, user: 'root' };
  }

  #spawn(mariadbd: string): void {
    const child = spawn(
      mariadbd,
      [
        '--no-defaults',
        '--user=mysql',
        `--datadir=${this.#dataDir}`,
        `--port=${this.port}`,
        '--bind-address=127.0.0.1',
        `--socket=${join(this.dir, 'mariadbd.sock')}`,
        `--pid-file=${join(this.dir, 'mariadbd.pid')}`,
        `--log-error=${join(this.dir, 'error.log')}`,
        ...FAST_ARGS,
      ],
      { stdio: 'ignore' },
    );
    this.#process = child;
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined;
    });
  }

  /** True once the error log says so; throws with the log when the server died on the way. */
  #ready(): boolean {
    const log = join(this.dir, 'error.log');
    const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
    if (this.#process === undefined) throw new Error(`mariadbd exited while starting:\n${text}`);
    return text.includes('ready for connections');
  }

  /** Stops the server (SIGKILL: nothing here needs to survive) and removes its folder. */
  async close(): Promise<void> {
    const child = this.#process;
    this.#process = undefined;
    if (child && child.exitCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The uid and gid of the `mysql` user, which owns the server's folder when running as root. */
function mysqlUser(): [number, number] {
  const passwd = readFileSync('/etc/passwd', 'utf8').split('\n');
  const entry = passwd.map((line) => line.split(':')).find((fields) => fields[0] === 'mysql');
  if (!entry) throw new Error("no `mysql` user: install Debian's `mariadb-server` package, which creates it");
  return [Number(entry[2]), Number(entry[3])];
}
