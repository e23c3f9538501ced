/**
 * The queue backend of a test run, in a form a child process can be handed on its command line. Free of
 * vitest, so fixtures that run as plain processes can use it.
 */

/** The queue backends the tests run on. */
export type TestBackendName = 'redis' | 'postgres' | 'cluster';

/**
 * The backend of this run, from `STORMGUARD_TEST_BACKEND` (default `redis`; `cluster` is a Redis Cluster of
 * three masters with a replica each); anything else is refused.
 */
export function testBackendName(value = process.env.STORMGUARD_TEST_BACKEND): TestBackendName {
  if (value === undefined || value === '' || value === 'redis') return 'redis';
  if (value === 'postgres' || value === 'cluster') return value;
  throw new Error(`STORMGUARD_TEST_BACKEND must be redis, postgres or cluster, got ${JSON.stringify(value)}`);
}

/** Where a worker connects: the backend and its connection, as JSON. */
export interface BackendDescriptor {
  backend: TestBackendName;
  /** Redis: `{ host, port }`; Redis Cluster: its nodes' `{ host, port }`; PostgreSQL: a connection string. */
  connection: unknown;
  /** BullMQ's key prefix for the queues (Redis Cluster: `{bull}`, a hash tag); BullMQ's default if absent. */
  bullPrefix?: string;
}

/**
 * The `connection` and `backend` options a worker (or a queue) takes for a descriptor. BullMQ's PostgreSQL
 * backend is imported only when asked for: BullMQ 5 has none.
 *
 * @example
 * const { connection, backend } = await workerConnectionOf(JSON.parse(process.argv[2]));
 */
export async function workerConnectionOf(
  descriptor: BackendDescriptor,
): Promise<{ connection: never; backend?: (...args: never[]) => unknown; prefix?: string }> {
  if (descriptor.backend === 'redis') return { connection: descriptor.connection as never };
  if (descriptor.backend === 'cluster') {
    const { Cluster } = await import('ioredis');
    const nodes = descriptor.connection as { host: string; port: number }[];
    const connection = new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: null } });
    return {
      connection: connection as never,
      ...(descriptor.bullPrefix ? { prefix: descriptor.bullPrefix } : {}),
    };
  }
  const { createPostgresBackend } = (await import('bullmq')) as unknown as {
    createPostgresBackend: (...args: never[]) => unknown;
  };
  return { connection: descriptor.connection as never, backend: createPostgresBackend };
}
