/**
 * One consumer process of bench/amqp: for each run the parent sends (`run`: side, queue, prefetch,
 * messages), it opens a connection of its own, counts every AMQP method it sends on it (by name, from
 * amqplib's `sendMethod` / `sendMessage`), consumes the queue the parent filled (a bare amqplib consumer
 * that acks, or stormguard's `createConsumer` with a processor that returns at once) and answers `done`
 * once it has acked every message: the time and this process's CPU time from its first ack to its last,
 * and the methods it sent in between. Measuring from the first ack leaves connecting and declaring out.
 *
 *   node --import tsx bench/amqp/consumer-process.ts '<amqp url>'
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import amqp, { type ChannelModel } from 'amqplib';
import { createConsumer } from '../../src/amqp/index.js';
import { definePolicy } from '../../src/policy/define-policy.js';
import { MemoryDeadLetterStore } from '../../src/runtime/memory-dead-letter-store.js';
import { nowMs, reply, serve } from '../../tests/helpers/ipc-process.js';

/** What the parent asks one run to be. */
export interface ConsumerRun {
  side: 'bare' | 'stormguard';
  queue: string;
  prefetch: number;
  messages: number;
}

const url = process.argv[2] ?? '';
// amqplib's method table (not among its exports: loaded by its path, next to the package's main file).
const require = createRequire(import.meta.url);
const defs = require(join(dirname(require.resolve('amqplib')), 'lib', 'defs.js')) as {
  info(id: number): { name: string };
};

const policy = definePolicy({
  name: 'bench',
  maxAttempts: 3,
  backoff: { type: 'fixed', delayMs: 100 },
  jitter: 'none',
});

/** Counts the methods `model` sends, by name, while `counting` is on. */
function instrument(model: ChannelModel) {
  const connection = (model as unknown as { connection: Record<string, (...args: unknown[]) => unknown> })
    .connection;
  const sent = new Map<string, number>();
  const state = { counting: false, acks: 0, onAck: () => {} };
  const count = (method: unknown) => {
    const name = defs.info(method as number).name;
    if (name === 'BasicAck') {
      state.acks++;
      // The first ack starts the measurement: what was sent before it is set-up.
      if (state.acks === 1) state.counting = true;
    }
    if (state.counting) sent.set(name, (sent.get(name) ?? 0) + 1);
    if (name === 'BasicAck') state.onAck();
  };
  for (const key of ['sendMethod', 'sendMessage'] as const) {
    const original = connection[key]?.bind(connection);
    if (!original) throw new Error(`amqplib's connection has no ${key}: the method count needs it`);
    connection[key] = (channel: unknown, method: unknown, ...rest: unknown[]) => {
      count(method);
      return original(channel, method, ...rest);
    };
  }
  return { sent, state };
}

serve(async (message) => {
  if (message.type === 'exit') process.exit(0);
  if (message.type !== 'run') return;
  const run = message.run as ConsumerRun;
  const model = await amqp.connect(url);
  const { sent, state } = instrument(model);
  let firstAckAt = 0;
  let cpuAtFirst: NodeJS.CpuUsage | undefined;
  const finished = new Promise<{ ms: number; cpuMicros: number }>((resolve) => {
    state.onAck = () => {
      if (state.acks === 1) {
        firstAckAt = nowMs();
        cpuAtFirst = process.cpuUsage();
      }
      if (state.acks === run.messages) {
        const cpu = process.cpuUsage(cpuAtFirst);
        resolve({ ms: nowMs() - firstAckAt, cpuMicros: cpu.user + cpu.system });
      }
    };
  });
  let stop: () => Promise<void>;
  if (run.side === 'bare') {
    const channel = await model.createChannel();
    await channel.prefetch(run.prefetch);
    await channel.consume(run.queue, (delivery) => {
      if (delivery) channel.ack(delivery);
    });
    stop = async () => {
      await channel.close();
    };
  } else {
    const consumer = createConsumer(run.queue, async () => {}, {
      connection: model,
      policy,
      deadLetters: new MemoryDeadLetterStore(),
      concurrency: run.prefetch,
      declareQueue: false,
    });
    stop = () => consumer.close();
  }
  const { ms, cpuMicros } = await finished;
  state.counting = false;
  await stop();
  await model.close();
  // The first ack opened the count; the methods are per message over the acks that followed it.
  reply({ type: 'done', ms, cpuMicros, sent: Object.fromEntries(sent) });
});
reply({ type: 'up' });
