import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, type ClusterOptions, Redis } from 'ioredis';
import { freePort, TestRedis, waitFor } from './redis-server.js';

const run = promisify(execFile);

/**
 * Options of {@link TestRedisCluster.start}.
 *
 * @example
 * await TestRedisCluster.start({ replicas: 1 }); // three masters, each with a replica
 */
export interface TestRedisClusterOptions {
  /** Replicas per master: 0 (three nodes) or 1 (six nodes, for failover tests). Default 0. */
  replicas?: 0 | 1;
  /**
   * How long a node may be unreachable before the others fail it over (`cluster-node-timeout`). Short, so a
   * failover test waits about a second for the promotion. Default 1 000 ms.
   */
  nodeTimeoutMs?: number;
}

/** One node as `CLUSTER NODES` shows it. */
export interface ClusterNodeInfo {
  readonly id: string;
  readonly port: number;
  readonly role: 'master' | 'replica';
  /** The master's node id, for a replica. */
  readonly masterId: string | undefined;
  /** Whether the node is marked failed (`fail` or `fail?`). */
  readonly failed: boolean;
  /** Number of slots it serves (masters). */
  readonly slots: number;
}

const MASTERS = 3;
/** How long cluster creation and agreement may take on a busy 2-core machine. */
const FORM_TIMEOUT_MS = 30_000;

/**
 * A throw-away Redis Cluster for one test file: three masters (plus a replica each when asked), every node a
 * {@link TestRedis} on its own free loopback port (and a free port for the cluster bus, so no bus port falls
 * off the end of the port range), nothing persisted, `hz 100`. `start()` resolves once every node reports
 * `cluster_state:ok`, agrees on who serves all 16 384 slots, and every replica's link to its master is up.
 * Nodes can be killed (SIGKILL) and restarted on the same port and folder, so they rejoin as themselves.
 * Never touches the machine's shared Redis.
 *
 * @example
 * const cluster = await TestRedisCluster.start();
 * const redis = cluster.client();
 * // ...
 * redis.disconnect();
 * await cluster.close();
 */
export class TestRedisCluster {
  readonly #paused = new Map<number, number>();

  private constructor(readonly nodes: readonly TestRedis[]) {}

  static async start(options: TestRedisClusterOptions = {}): Promise<TestRedisCluster> {
    const count = MASTERS * (1 + (options.replicas ?? 0));
    const nodeTimeout = options.nodeTimeoutMs ?? 1_000;
    const nodes: TestRedis[] = [];
    try {
      for (let i = 0; i < count; i++) nodes.push(await startNode(nodeTimeout));
      const cluster = new TestRedisCluster(nodes);
      await run('redis-cli', [
        '--cluster',
        'create',
        ...nodes.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        String(options.replicas ?? 0),
        '--cluster-yes',
      ]);
      await waitFor(() => cluster.healthy(), FORM_TIMEOUT_MS, 'the Redis Cluster to form');
      return cluster;
    } catch (error) {
      await Promise.all(nodes.map((node) => node.close()));
      throw error;
    }
  }

  /** Seed nodes for an ioredis `Cluster` or a BullMQ connection. */
  get startupNodes(): { host: string; port: number }[] {
    return this.nodes.map((node) => node.connection);
  }

  /** Every node's URL, comma-separated: what the CLI's `--redis` takes for a cluster. */
  get url(): string {
    return this.nodes.map((node) => node.url).join(',');
  }

  /** A new ioredis `Cluster` client on this cluster (`options` as ioredis takes them). The caller disconnects it. */
  client(options: ClusterOptions = {}): Cluster {
    return new Cluster(this.startupNodes, { slotsRefreshTimeout: 2_000, ...options });
  }

  /** The cluster as one running node sees it (`CLUSTER NODES`). */
  async topology(): Promise<ClusterNodeInfo[]> {
    const seed = this.nodes.find((node) => node.running);
    if (!seed) throw new Error('no node of the cluster is running');
    return parseClusterNodes(await command(seed.port, 'CLUSTER', 'NODES'));
  }

  /** The node serving `key`'s slot. */
  async masterOf(key: string): Promise<TestRedis> {
    const seed = this.nodes.find((node) => node.running);
    if (!seed) throw new Error('no node of the cluster is running');
    const slot = Number(await command(seed.port, 'CLUSTER', 'KEYSLOT', key));
    const shards = (await commandReply(seed.port, 'CLUSTER', 'SLOTS')) as [
      number,
      number,
      [string, number],
    ][];
    const shard = shards.find(([from, to]) => slot >= from && slot <= to);
    const port = shard?.[2][1];
    const node = this.nodes.find((candidate) => candidate.port === port);
    if (!node) throw new Error(`no node serves slot ${slot} of ${JSON.stringify(key)}`);
    return node;
  }

  /**
   * Whether every running node says `cluster_state:ok`, every one sees all 16 384 slots served by a master
   * nobody marks failed, and every replica's replication link is up.
   */
  async healthy(): Promise<boolean> {
    try {
      for (const node of this.nodes.filter((candidate) => candidate.running)) {
        const info = await command(node.port, 'CLUSTER', 'INFO');
        if (!info.includes('cluster_state:ok')) return false;
        const view = parseClusterNodes(await command(node.port, 'CLUSTER', 'NODES'));
        const live = view.filter((n) => n.role === 'master' && !n.failed);
        if (live.reduce((sum, n) => sum + n.slots, 0) !== 16_384) return false;
        const self = view.find((n) => n.port === node.port);
        if (self?.role === 'replica') {
          const replication = await command(node.port, 'INFO', 'replication');
          if (!replication.includes('master_link_status:up')) return false;
        }
      }
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Freezes `node` (SIGSTOP) until {@link resume}: its sockets stay open but it answers nothing, as a
   * replica that stops acknowledging replication would.
   */
  async pause(node: TestRedis): Promise<void> {
    const pid = await processIdOf(node);
    this.#paused.set(node.port, pid);
    process.kill(pid, 'SIGSTOP');
  }

  /** Wakes a node {@link pause} froze (SIGCONT). */
  async resume(node: TestRedis): Promise<void> {
    const pid = this.#paused.get(node.port);
    if (pid !== undefined) process.kill(pid, 'SIGCONT');
    this.#paused.delete(node.port);
  }

  /** The replicas of the master serving `key`. */
  async replicasOf(key: string): Promise<TestRedis[]> {
    const master = await this.masterOf(key);
    const view = await this.topology();
    const masterId = view.find((n) => n.port === master.port)?.id;
    const ports = view.filter((n) => n.role === 'replica' && n.masterId === masterId).map((n) => n.port);
    return this.nodes.filter((node) => ports.includes(node.port));
  }

  /** Stops every node and removes its folder. */
  async close(): Promise<void> {
    for (const port of [...this.#paused.keys()]) {
      const node = this.nodes.find((candidate) => candidate.port === port);
      if (node) await this.resume(node);
    }
    await Promise.all(this.nodes.map((node) => node.close()));
  }
}

/** Attempts at starting one node: a free port can be taken by another process before the node binds it. */
const NODE_START_ATTEMPTS = 3;

async function startNode(nodeTimeoutMs: number): Promise<TestRedis> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestRedis.start({
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-port',
          String(await freePort()),
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          // A test bed that survives a lost master: the promoted replica serves at once.
          '--cluster-replica-validity-factor',
          '0',
          '--hz',
          '100',
        ],
      });
    } catch (error) {
      if (attempt >= NODE_START_ATTEMPTS) throw error;
    }
  }
}

/** Parses `CLUSTER NODES` output. */
export function parseClusterNodes(text: string): ClusterNodeInfo[] {
  return text
    .trim()
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => {
      const [id = '', address = '', flags = '', masterId = '-', , , , , ...slots] = line.split(' ');
      const flagList = flags.split(',');
      return {
        id,
        port: Number(address.split('@')[0]?.split(':').at(-1)),
        role: flagList.includes('master') ? 'master' : 'replica',
        masterId: masterId === '-' ? undefined : masterId,
        failed: flagList.includes('fail') || flagList.includes('fail?'),
        slots: slots
          .filter((range) => !range.startsWith('['))
          .reduce((sum, range) => sum + slotCount(range), 0),
      };
    });
}

function slotCount(range: string): number {
  const [from, to = from] = range.split('-').map(Number);
  return (to ?? 0) - (from ?? 0) + 1;
}

/** One command on one node, on a short-lived connection that never retries. */
async function commandReply(port: number, name: string, ...args: string[]): Promise<unknown> {
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  try {
    await redis.connect();
    return await redis.call(name, ...args);
  } finally {
    redis.disconnect();
  }
}

/** The process id of the redis-server behind `node` (`INFO server`). */
async function processIdOf(node: TestRedis): Promise<number> {
  const info = await command(node.port, 'INFO', 'server');
  const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
  if (!Number.isSafeInteger(pid)) throw new Error(`no process_id in INFO server of port ${node.port}`);
  return pid;
}

async function command(port: number, name: string, ...args: string[]): Promise<string> {
  return String(await commandReply(port, name, ...args));
}
