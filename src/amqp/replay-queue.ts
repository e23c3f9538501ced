import type { ConfirmChannel, Message } from 'amqplib';
import type { ReplayClaim, StoredDeadLetter } from '../runtime/contracts.js';
import type { PutBackOptions, ReplayQueue } from '../runtime/replay/replay-queue.js';
import { type AmqpMessageData, restoredHeaders } from './amqp-job.js';
import { confirm } from './consumer.js';
import { HEADER } from './headers.js';
import { amqpReplayKey } from './replay-key.js';

/**
 * The replay port on RabbitMQ: a record's message goes back to its queue (the default exchange, routed by
 * the queue's name) with its body, properties and headers as they were, marked as the `replays + 1`-th
 * replay of the record, and the promise resolves on the broker's publisher confirm.
 *
 * It goes to the queue, not to the exchange the producer used: an exchange may route the message to other
 * queues too (a fanout, a topic with several bindings), whose consumers already handled it.
 *
 * The message is published `mandatory`: when the queue does not exist, RabbitMQ returns it and the
 * promise rejects, so the record stays for a later replay.
 *
 * RabbitMQ cannot refuse a duplicate: "never twice" rests on the dead-letter store's claim. The one gap
 * left (a replay stopped after the confirm and before the record was removed, then run again) publishes
 * the message again with the same `messageId` (the producer's, or the claim's id when it had none) and
 * the same `x-stormguard-job-id`: a consumer with an idempotency key makes it harmless.
 *
 * @example
 * const channel = await connection.createConfirmChannel();
 * await runReplay({ store, runs, queue: 'orders', jobs: amqpReplayQueue(channel, 'orders') }, runId);
 */
export function amqpReplayQueue(channel: ConfirmChannel, queue: string): ReplayQueue {
  return {
    replayKey: amqpReplayKey,
    async putBack(record: StoredDeadLetter, claim: ReplayClaim, _options: PutBackOptions): Promise<string> {
      const kept = amqpDataOf(record);
      const headers: Record<string, unknown> = {
        ...restoredHeaders(kept.headers),
        [HEADER.jobId]: claim.jobId,
        [HEADER.replays]: record.replays + 1,
        [HEADER.replayedFrom]: record.id,
        [HEADER.exchange]: kept.exchange,
        [HEADER.routingKey]: kept.routingKey,
      };
      if (record.traceLinks && record.traceLinks.length > 0)
        headers[HEADER.traceLinks] = JSON.stringify(record.traceLinks);
      const { expiration: _expiration, ...properties } = kept.properties;
      // Mandatory: a queue that is gone makes RabbitMQ return the message (before its confirm) instead of
      // confirming it into nothing, and the record must then stay.
      let returned = false;
      const onReturn = (message: Message) => {
        if (message.properties.headers?.[HEADER.jobId] === claim.jobId) returned = true;
      };
      channel.on('return', onReturn);
      try {
        await confirm(channel, '', queue, Buffer.from(kept.body, 'base64'), {
          ...properties,
          messageId: kept.properties.messageId ?? claim.jobId,
          headers,
          persistent: true,
          mandatory: true,
        });
      } finally {
        channel.off('return', onReturn);
      }
      if (returned)
        throw new Error(
          `queue "${queue}" does not exist on the broker: RabbitMQ returned dead letter ${record.id}'s message; declare the queue (start its consumer) and replay again`,
        );
      return claim.jobId;
    },
  };
}

/** A record's data as an AMQP consumer filed it; a record from another engine is refused, naming it. */
export function amqpDataOf(record: Pick<StoredDeadLetter, 'id' | 'data' | 'opts'>): AmqpMessageData {
  const data = record.data as Partial<AmqpMessageData> | null;
  if (
    record.opts?.engine !== 'amqp' ||
    typeof data !== 'object' ||
    data === null ||
    typeof data.body !== 'string'
  )
    throw new Error(
      `dead letter ${record.id} was not filed by a RabbitMQ consumer (its data is not a kept message): replay it with the engine that filed it`,
    );
  return {
    body: data.body,
    properties: data.properties ?? {},
    headers: data.headers ?? {},
    exchange: data.exchange ?? '',
    routingKey: data.routingKey ?? '',
  };
}
