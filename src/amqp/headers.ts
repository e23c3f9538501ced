/**
 * The headers stormguard writes on the copies of a message it publishes (a retry, a park, a replay), so
 * that what the runtime needs travels with the message and a consumer anywhere reads it back with no
 * round trip. A message a producer sent has none of them.
 */
export const HEADER = {
  /** The job's id: kept by every copy, so its attempt state and dead letter stay one job's. */
  jobId: 'x-stormguard-job-id',
  /** When the job was first received, epoch ms (its age counts from here). */
  createdAt: 'x-stormguard-created-at',
  /** When the copy may run, epoch ms: a copy that comes back from a delay bucket early hops again. */
  dueAt: 'x-stormguard-due-at',
  /** The delay bucket a copy is routed to: the delay exchange binds each bucket on it (a headers exchange ignores `x-` headers, hence no prefix). */
  bucket: 'stormguard-bucket',
  /** Executions of the job before this copy was published. */
  starts: 'x-stormguard-starts',
  /** Deliveries of the job that ended with no outcome (a consumer or its connection died) before this copy. */
  stalls: 'x-stormguard-stalls',
  /** stormguard's note: an outcome decided and not written yet (JSON). */
  note: 'x-stormguard-note',
  /** How many replays the job's lineage went through. */
  replays: 'x-stormguard-replays',
  /** The dead-letter record a replayed copy came from. */
  replayedFrom: 'x-stormguard-replayed-from',
  /** The exchange the producer published the message to (a copy's own delivery says the delay bucket's). */
  exchange: 'x-stormguard-exchange',
  /** The routing key the producer published the message with. */
  routingKey: 'x-stormguard-routing-key',
  /** The trace contexts of the attempts of the job a replayed copy came from (JSON array). */
  traceLinks: 'x-stormguard-trace-links',
} as const;

const OWN = new Set<string>(Object.values(HEADER));

/** True for a header stormguard writes: a record keeps the producer's headers only. */
export function isOwnHeader(name: string): boolean {
  return OWN.has(name);
}

/** A header read as a finite number, or `undefined` (a header may arrive as a number, a string or a bigint). */
export function numberHeader(headers: Record<string, unknown> | undefined, name: string): number | undefined {
  const value = headers?.[name];
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    return Number(value);
  return undefined;
}

/** A header read as a string, or `undefined`. */
export function stringHeader(headers: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = headers?.[name];
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}
