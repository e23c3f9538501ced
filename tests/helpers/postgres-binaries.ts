import { execFileSync, type SpawnOptions, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Where the PostgreSQL server binaries live, or why they cannot be found. */
let cachedBinDir: string | undefined;

/**
 * The folder holding `initdb`, `postgres` and `pg_ctl`. Debian keeps them off PATH, so this asks
 * `pg_config --bindir` first, then looks in /usr/lib/postgresql/<version>/bin (newest version first).
 * Throws a message saying what to install when there is none: a missing server is a failing test.
 */
export function postgresBinDir(): string {
  if (cachedBinDir) return cachedBinDir;
  const candidates: string[] = [];
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim());
  } catch {
    // no pg_config (libpq-dev): fall back to Debian's layout
  }
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian).sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((v) => join(debian, v, 'bin')));
  }
  const found = candidates.find((dir) =>
    ['initdb', 'postgres', 'pg_ctl'].every((b) => existsSync(join(dir, b))),
  );
  if (!found) {
    throw new Error(
      'PostgreSQL server binaries (initdb, postgres, pg_ctl) not found in `pg_config --bindir` or ' +
        "/usr/lib/postgresql/*/bin: install Debian's `postgresql` package (apt-get install postgresql)",
    );
  }
  cachedBinDir = found;
  return found;
}

/** True when this process runs as root, so the server must run as the `postgres` user (it refuses root). */
function asRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * A temporary folder the server may own: created under `parent` and, when running as root, handed to
 * the `postgres` user.
 */
export function serverFolder(parent: string, prefix: string): string {
  const dir = mkdtempSync(join(parent, prefix));
  if (asRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  return dir;
}

/** The command line that runs a server binary as a user it accepts (`runuser -u postgres` under root). */
function commandLine(binary: string, args: readonly string[]): [string, string[]] {
  const path = join(postgresBinDir(), binary);
  return asRoot() ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, [...args]];
}

/** Runs a server binary to completion; rejects with its output when it exits non-zero. */
export function runServerBinary(
  binary: string,
  args: readonly string[],
  options: SpawnOptions = {},
): Promise<void> {
  const [command, argv] = commandLine(binary, args);
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${binary} ${args.join(' ')} exited with ${code ?? signal}:\n${output}`));
    });
  });
}
