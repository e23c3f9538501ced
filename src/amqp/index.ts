/**
 * stormguard on RabbitMQ (amqplib): `createConsumer`, shaped like `createWorker`, with retries through
 * delay buckets, dead letters in stormguard's store, flow control, and the replay port.
 *
 * @example
 * import { createConsumer } from 'stormguard/amqp';
 */

// The replay engine, so a RabbitMQ project replays with amqpReplayQueue without loading BullMQ.
export {
  type ReplayOptions,
  type ReplayProgress,
  type ReplayReport,
  replayDeadLetters,
} from '../runtime/replay/replay.js';
export type { PutBackOptions, ReplayQueue } from '../runtime/replay/replay-queue.js';
export {
  type CreateReplayRunOptions,
  createReplayRun,
  type RunReplayOptions,
  runReplay,
} from '../runtime/replay/replay-runs.js';
export type { AmqpJob, AmqpMessageData, AmqpProperties } from './amqp-job.js';
export type { AmqpConnection, ReconnectOptions } from './connection.js';
export {
  AmqpConsumer,
  type AmqpProcessor,
  createConsumer,
  failedQueueOf,
} from './consumer.js';
export type { AmqpConsumerOptions } from './consumer-options.js';
export {
  BUCKET_COUNT,
  bucketQueue,
  bucketTtlMs,
  DELAY_EXCHANGE,
  DELAY_UNIT_MS,
  declareDelayBuckets,
  delayHops,
  nextBucket,
} from './delay-buckets.js';
export {
  type ImportDeadLettersOptions,
  type ImportProgress,
  type ImportReport,
  importDeadLetters,
} from './import.js';
export { amqpReplayKey } from './replay-key.js';
export { amqpDataOf, amqpReplayQueue } from './replay-queue.js';
