/**
 * stormguard's createConsumer against a bare amqplib consumer that only acks, on the local broker: messages
 * per second, the consumer process's CPU µs per message, and the AMQP methods the consumer sends per
 * message (counted on its connection: the goal on the success path is the ack alone, no round trip more).
 * Prefetch 1, 10 and 50; in each round both sides consume the same number of pre-published messages in
 * one consumer process (started once, so start-up and JIT warm-up stay out), in alternating order round
 * by round. Each figure is the median of the rounds. It works in a vhost of its own (rabbitmqctl, root),
 * deleted at the end.
 *
 *   npx tsx bench/amqp/index.ts [--messages 3000] [--rounds 3] [--json]
 */
import amqp from 'amqplib';
import { declareDelayBuckets } from '../../src/amqp/delay-buckets.js';
import { IpcProcess } from '../../tests/helpers/ipc-process.js';
import { rabbitmqctl, TEST_VHOST_PREFIX } from '../../tests/helpers/rabbitmq-admin.js';
import { benchArgs, formatTable, median } from '../common.js';
import type { ConsumerRun } from './consumer-process.js';

const PREFETCH = [1, 10, 50];
const SIDES: ConsumerRun['side'][] = ['bare', 'stormguard'];

interface Measurement {
  messagesPerSecond: number;
  cpuMicrosPerMessage: number;
  /** Methods the consumer sent per message, by name. */
  methodsPerMessage: Record<string, number>;
}

interface Row {
  prefetch: number;
  bareMessagesPerSecond: number;
  stormguardMessagesPerSecond: number;
  ratio: number;
  bareCpuMicrosPerMessage: number;
  stormguardCpuMicrosPerMessage: number;
  bareMethodsPerMessage: Record<string, number>;
  stormguardMethodsPerMessage: Record<string, number>;
}

const { size: messages, rounds, json } = benchArgs({ size: ['messages', 3_000, 100] });
const vhost = `${TEST_VHOST_PREFIX}${process.pid}-${Date.now()}-bench`;
await rabbitmqctl(['add_vhost', vhost]);
const child = { process: undefined as IpcProcess | undefined };
try {
  await rabbitmqctl(['set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']);
  const url = `amqp://guest:guest@127.0.0.1:5672/${encodeURIComponent(vhost)}`;
  const connection = await amqp.connect(url);
  const channel = await connection.createConfirmChannel();
  await declareDelayBuckets(channel);
  const consumer = new IpcProcess(new URL('./consumer-process.ts', import.meta.url), [url]);
  child.process = consumer;
  await consumer.next('up', 60_000);

  let runs = 0;
  const measure = async (side: ConsumerRun['side'], prefetch: number): Promise<Measurement> => {
    const queue = `bench-${side}-${prefetch}-${runs++}`;
    await channel.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
    const body = Buffer.from(JSON.stringify({ n: 1 }));
    for (let i = 0; i < messages; i++) channel.sendToQueue(queue, body, { persistent: true });
    await channel.waitForConfirms();
    const run: ConsumerRun = { side, queue, prefetch, messages };
    const done = await consumer.request({ type: 'run', run }, 'done', 300_000);
    await channel.deleteQueue(queue);
    const sent = done.sent as Record<string, number>;
    return {
      messagesPerSecond: ((messages - 1) / (done.ms as number)) * 1_000,
      cpuMicrosPerMessage: (done.cpuMicros as number) / messages,
      methodsPerMessage: Object.fromEntries(Object.entries(sent).map(([name, n]) => [name, n / messages])),
    };
  };

  const results = new Map<string, Measurement[]>();
  for (let round = 0; round < rounds; round++)
    for (const prefetch of PREFETCH) {
      const order = round % 2 === 0 ? SIDES : [...SIDES].reverse();
      for (const side of order) {
        const key = `${side}:${prefetch}`;
        results.set(key, [...(results.get(key) ?? []), await measure(side, prefetch)]);
      }
    }
  await connection.close();

  const medianOf = (side: ConsumerRun['side'], prefetch: number) => {
    const all = results.get(`${side}:${prefetch}`) ?? [];
    const names = new Set(all.flatMap((m) => Object.keys(m.methodsPerMessage)));
    return {
      messagesPerSecond: median(all.map((m) => m.messagesPerSecond)),
      cpuMicrosPerMessage: median(all.map((m) => m.cpuMicrosPerMessage)),
      methodsPerMessage: Object.fromEntries(
        [...names].map((name) => [name, median(all.map((m) => m.methodsPerMessage[name] ?? 0))]),
      ),
    };
  };
  const rows: Row[] = PREFETCH.map((prefetch) => {
    const bare = medianOf('bare', prefetch);
    const stormguard = medianOf('stormguard', prefetch);
    return {
      prefetch,
      bareMessagesPerSecond: Math.round(bare.messagesPerSecond),
      stormguardMessagesPerSecond: Math.round(stormguard.messagesPerSecond),
      ratio: Number((stormguard.messagesPerSecond / bare.messagesPerSecond).toFixed(2)),
      bareCpuMicrosPerMessage: Math.round(bare.cpuMicrosPerMessage),
      stormguardCpuMicrosPerMessage: Math.round(stormguard.cpuMicrosPerMessage),
      bareMethodsPerMessage: bare.methodsPerMessage,
      stormguardMethodsPerMessage: stormguard.methodsPerMessage,
    };
  });

  if (json) process.stdout.write(`${JSON.stringify({ messages, rounds, rows }, null, 2)}\n`);
  else {
    const methods = (m: Record<string, number>) =>
      Object.entries(m)
        .map(([name, n]) => `${name} ${n.toFixed(3)}`)
        .join(', ');
    process.stdout.write(
      `${formatTable([
        [
          'prefetch',
          'bare msg/s',
          'stormguard msg/s',
          'ratio',
          'bare CPU µs/msg',
          'stormguard CPU µs/msg',
          'bare methods/msg',
          'stormguard methods/msg',
        ],
        ...rows.map((r) => [
          String(r.prefetch),
          String(r.bareMessagesPerSecond),
          String(r.stormguardMessagesPerSecond),
          r.ratio.toFixed(2),
          String(r.bareCpuMicrosPerMessage),
          String(r.stormguardCpuMicrosPerMessage),
          methods(r.bareMethodsPerMessage),
          methods(r.stormguardMethodsPerMessage),
        ]),
      ])}\n${messages} messages per run, median of ${rounds} rounds, sides alternated round by round.\n`,
    );
  }
} finally {
  await child.process?.close().catch(() => {});
  await rabbitmqctl(['delete_vhost', vhost]);
}
