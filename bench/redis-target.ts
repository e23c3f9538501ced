/**
 * The two Redis shapes the fleet benchmarks run on, each started for the run on free loopback ports (never
 * the machine's shared Redis): one redis-server, and a Redis Cluster of three masters. Each can say what its
 * servers did between two points, as the servers count it: CPU time (`INFO cpu`, used_cpu_sys +
 * used_cpu_user) and commands executed (`INFO commandstats`, commands inside Lua scripts included), summed
 * over every master.
 */
import { Cluster, Redis } from 'ioredis';
import { TestRedisCluster } from '../tests/helpers/redis-cluster.js';
import { TestRedis } from '../tests/helpers/redis-server.js';

export type TargetName = 'redis' | 'cluster';

/** Where a process connects: what it needs to build its own clients. */
export interface TargetAddress {
  name: TargetName;
  nodes: { host: string; port: number }[];
}

/** What the servers had done at one point: CPU seconds, and commands by name. */
export interface ServerCounters {
  cpuSeconds: number;
  commands: Record<string, number>;
}

/** A running target. */
export interface RedisTarget {
  readonly address: TargetAddress;
  /** The server and its version, for the printout. */
  readonly server: string;
  /** The masters' counters now (the `INFO` calls that read them are not counted). */
  counters(): Promise<ServerCounters>;
  close(): Promise<void>;
}

/** A new ioredis client on `address` (`maxRetriesPerRequest: null`, as BullMQ wants). The caller disconnects it. */
export function connect(address: TargetAddress): Redis | Cluster {
  if (address.name === 'cluster')
    return new Cluster(address.nodes, {
      slotsRefreshTimeout: 2_000,
      redisOptions: { maxRetriesPerRequest: null },
    });
  const [node] = address.nodes;
  if (!node) throw new Error('a Redis target needs one node');
  return new Redis({ ...node, maxRetriesPerRequest: null });
}

/** Starts the target named `name`. */
export async function startTarget(name: TargetName): Promise<RedisTarget> {
  if (name === 'redis') {
    const server = await TestRedis.start();
    return withCounters({ name, nodes: [server.connection] }, [server.port], () => server.close());
  }
  const cluster = await TestRedisCluster.start();
  const masters = (await cluster.topology()).filter((node) => node.role === 'master').map((n) => n.port);
  return withCounters({ name, nodes: cluster.startupNodes }, masters, () => cluster.close());
}

async function withCounters(
  address: TargetAddress,
  masters: number[],
  stop: () => Promise<void>,
): Promise<RedisTarget> {
  const direct = masters.map((port) => new Redis({ host: '127.0.0.1', port }));
  const version = /redis_version:(\S+)/.exec(await (direct[0] as Redis).info('server'))?.[1] ?? '?';
  return {
    address,
    server:
      address.name === 'cluster' ? `Redis ${version} Cluster, ${masters.length} masters` : `Redis ${version}`,
    async counters() {
      const total: ServerCounters = { cpuSeconds: 0, commands: {} };
      for (const redis of direct) {
        const [cpu, stats] = await Promise.all([redis.info('cpu'), redis.info('commandstats')]);
        total.cpuSeconds += Number(/used_cpu_sys:([\d.]+)/.exec(cpu)?.[1] ?? 0);
        total.cpuSeconds += Number(/used_cpu_user:([\d.]+)/.exec(cpu)?.[1] ?? 0);
        for (const [, command = '', calls] of stats.matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) {
          if (command === 'info') continue;
          total.commands[command] = (total.commands[command] ?? 0) + Number(calls);
        }
      }
      return total;
    },
    async close() {
      for (const redis of direct) redis.disconnect();
      await stop();
    },
  };
}

/** What happened between two readings: CPU seconds, and commands by name (only those that ran). */
export function difference(before: ServerCounters, after: ServerCounters): ServerCounters {
  const commands: Record<string, number> = {};
  for (const [command, calls] of Object.entries(after.commands)) {
    const delta = calls - (before.commands[command] ?? 0);
    if (delta > 0) commands[command] = delta;
  }
  return { cpuSeconds: after.cpuSeconds - before.cpuSeconds, commands };
}

/** The number of commands in a reading. */
export function commandTotal(counters: ServerCounters): number {
  return Object.values(counters.commands).reduce((sum, calls) => sum + calls, 0);
}
