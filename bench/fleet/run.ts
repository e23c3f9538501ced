/**
 * What the parent and the worker processes of bench/fleet agree on: what one run is, the options a job is
 * added with, and how either side connects to the queue.
 */
import { connect } from '../redis-target.js';
import type { BackendAddress } from './servers.js';

export type Path = 'success' | 'retry';

/** What the parent asks one run to be. */
export interface FleetRun {
  queue: string;
  /** BullMQ prefix (hash-tagged on a cluster). */
  prefix: string;
  side: 'bare' | 'stormguard';
  path: Path;
  /** Milliseconds each job takes (0: a no-op). */
  jobMs: number;
  concurrency: number;
  /** Profile this run (with a profile folder): not a warm-up or a MONITOR run. */
  profile: boolean;
}

/** The retry path's delay before the second attempt, on both sides. */
export const RETRY_DELAY_MS = 10;

/** The options the parent adds a job with: BullMQ's own retry on the bare side of the retry path. */
export function jobOptions(side: FleetRun['side'], path: Path) {
  return side === 'bare' && path === 'retry'
    ? { attempts: 2, backoff: { type: 'fixed', delay: RETRY_DELAY_MS }, removeOnComplete: true }
    : { removeOnComplete: true };
}

/** BullMQ's connection and backend for a queue at `address`, and how to let go of them. */
export async function queueConnection(address: BackendAddress) {
  if (address.kind === 'redis') {
    const client = connect(address.target);
    return { connection: client, backend: undefined, client, close: () => client.disconnect() };
  }
  const { createPostgresBackend } = (await import('bullmq')) as unknown as {
    createPostgresBackend: (...args: never[]) => unknown;
  };
  return {
    connection: { connectionString: address.url, migrate: true },
    backend: createPostgresBackend,
    client: undefined,
    close: () => undefined,
  };
}
