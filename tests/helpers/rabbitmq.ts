import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import amqp, { type ChannelModel } from 'amqplib';
import { inject } from 'vitest';
import { createTestVhost, VHOST_READY_FILE } from './rabbitmq-admin.js';
import { waitFor } from './redis-server.js';

/**
 * The run's own RabbitMQ vhost on the machine's broker (127.0.0.1:5672): created by the first test file
 * that asks for it (the others wait for it), deleted when the run ends (`rabbitmq-global-setup.ts`).
 * Call it in `beforeAll`; it resolves with the vhost's AMQP URL, as guest.
 *
 * @example
 * let url: string;
 * beforeAll(async () => { url = await ensureRabbitVhost(); });
 */
export async function ensureRabbitVhost(): Promise<string> {
  const vhost = inject('stormguardRabbitVhost');
  const runDir = inject('stormguardRabbitRun');
  const ready = join(runDir, VHOST_READY_FILE);
  if (!existsSync(ready)) {
    let creator = false;
    try {
      mkdirSync(join(runDir, 'creating'));
      creator = true;
    } catch {
      // Another test file is creating it.
    }
    if (creator) {
      await createTestVhost(vhost);
      writeFileSync(ready, vhost);
    } else {
      await waitFor(() => existsSync(ready), 60_000, `the run's RabbitMQ vhost ${vhost}`, 100);
    }
  }
  return rabbitUrl();
}

/** The AMQP URL of the run's vhost, as guest. */
export function rabbitUrl(): string {
  return `amqp://guest:guest@127.0.0.1:5672/${encodeURIComponent(inject('stormguardRabbitVhost'))}`;
}

/** A queue name of its own for one test: `<base>-<8 random hex>`. */
export function uniqueQueue(base: string): string {
  return `${base}-${randomUUID().slice(0, 8)}`;
}

/** A plain amqplib connection to the run's vhost, for a test's own publishing and checks. */
export function connectRabbit(): Promise<ChannelModel> {
  return amqp.connect(rabbitUrl());
}
