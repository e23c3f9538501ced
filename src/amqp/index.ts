/**
 * stormguard on RabbitMQ (amqplib): `createConsumer`, shaped like `createWorker`, with retries through
 * delay buckets, dead letters in stormguard's store, flow control, and the replay port.
 *
 * @example
 * import { createConsumer } from 'stormguard/amqp';
 */
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
export { amqpDataOf, amqpReplayQueue } from './replay-queue.js';
