/**
 * The servers one cell of bench/fleet runs on, each started for the run on free loopback ports (never the
 * machine's shared services), and what they did between two readings, as the servers count it:
 * - `redis`: one redis-server, BullMQ and stormguard's Redis stores on it;
 * - `cluster`: a three-master Redis Cluster, the same;
 * - `postgres`: one PostgreSQL, BullMQ 6's PostgreSQL backend and stormguard's PostgreSQL stores on it, no
 *   Redis at all (as the end-to-end tests' PostgreSQL world and bench/worker wire it);
 * - `redis-pg`: BullMQ on one redis-server, stormguard's PostgreSQL stores on one PostgreSQL (CPU and
 *   commands of both, summed).
 *
 * CPU: on Redis `INFO cpu` (used_cpu_sys + used_cpu_user) summed over the masters; on PostgreSQL `/proc`:
 * utime + stime of the postmaster and of every process it started that is still running (backends,
 * background workers), plus the postmaster's cutime + cstime (its children that ended, once reaped).
 * Commands: on Redis `INFO commandstats` (inside Lua scripts included), on PostgreSQL `pg_stat_statements`
 * (top-level statements of every client, counted as `statements`).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { type ServerCounters, startTarget, type TargetAddress } from '../redis-target.js';
import { postgresBackend } from '../worker/backends.js';

export type CellName = 'redis' | 'cluster' | 'postgres' | 'redis-pg';

/** Where BullMQ or stormguard's stores live, as a process needs it to connect. */
export type BackendAddress = { kind: 'redis'; target: TargetAddress } | { kind: 'postgres'; url: string };

/** Everything a worker process of a cell needs to connect. */
export interface CellAddress {
  name: CellName;
  /** Where BullMQ's queue lives. */
  queue: BackendAddress;
  /** Where stormguard's budget and dead-letter (attempt state) stores live. */
  stores: BackendAddress;
}

/** A running cell. */
export interface CellServers {
  readonly address: CellAddress;
  /** The server(s) and version, for the printout. */
  readonly server: string;
  /** CPU seconds and commands so far, summed over the cell's servers. */
  counters(): Promise<ServerCounters>;
  close(): Promise<void>;
}

/** Starts the servers of the cell named `name`. */
export async function startCell(name: CellName): Promise<CellServers> {
  if (name === 'postgres') {
    const postgres = await startPostgres();
    return { ...postgres, address: { name, queue: postgres.backend, stores: postgres.backend } };
  }
  const redis = await startRedis(name === 'cluster' ? 'cluster' : 'redis');
  if (name !== 'redis-pg')
    return { ...redis, address: { name, queue: redis.backend, stores: redis.backend } };
  const postgres = await startPostgres().catch(async (error: unknown) => {
    await redis.close();
    throw error;
  });
  return {
    address: { name, queue: redis.backend, stores: postgres.backend },
    server: `${redis.server} (BullMQ); ${postgres.server} (stormguard's stores)`,
    async counters() {
      const [r, p] = await Promise.all([redis.counters(), postgres.counters()]);
      return { cpuSeconds: r.cpuSeconds + p.cpuSeconds, commands: { ...r.commands, ...p.commands } };
    },
    async close() {
      await redis.close();
      await postgres.close();
    },
  };
}

/** One server kind of a cell: where it is, and its counters. */
type Started = Omit<CellServers, 'address'> & { backend: BackendAddress };

async function startRedis(name: 'redis' | 'cluster'): Promise<Started> {
  const target = await startTarget(name);
  return {
    backend: { kind: 'redis', target: target.address },
    server: target.server,
    counters: () => target.counters(),
    close: () => target.close(),
  };
}

async function startPostgres(): Promise<Started> {
  const backend = await postgresBackend();
  const url = (backend.connection as { connectionString: string }).connectionString;
  const postmaster = await postmasterOf(url).catch(async (error: unknown) => {
    await backend.close();
    throw error;
  });
  return {
    backend: { kind: 'postgres', url },
    server: backend.server,
    async counters() {
      return {
        cpuSeconds: processTreeCpuSeconds(postmaster),
        commands: { statements: await backend.commandCount() },
      };
    },
    close: () => backend.close(),
  };
}

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** The fields of `/proc/<pid>/stat` after the command name: [state, ppid, …] (utime is index 11). */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined; // ended between the listing and the read
  }
}

/** The pid of the postmaster behind `url`: the parent of the backend serving a connection to it. */
async function postmasterOf(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    // Read while the backend still runs: it ends with the connection.
    return parentOf(rows[0]?.pid ?? 0);
  } finally {
    await client.end();
  }
}

function parentOf(pid: number): number {
  const fields = statFields(pid);
  if (!fields) throw new Error(`no process ${pid} in /proc`);
  return Number(fields[1]);
}

/**
 * CPU seconds of `root` and its running children (utime + stime), and of its children that ended and were
 * reaped (root's cutime + cstime).
 */
export function processTreeCpuSeconds(root: number): number {
  const own = statFields(root);
  if (!own) throw new Error(`no process ${root} in /proc`);
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(entry);
    if (fields && Number(fields[1]) === root) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / TICKS_PER_SECOND;
}
