import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { rabbitmqctl, TEST_VHOST_PREFIX, VHOST_READY_FILE } from './rabbitmq-admin.js';

/**
 * Vitest global setup: names the run's RabbitMQ vhost (`stormguard-test-<pid>-<ms>`) and a folder where
 * the first test file that needs the broker creates it (`ensureRabbitVhost` in `rabbitmq.ts`), so runs
 * without RabbitMQ tests pay nothing (each `rabbitmqctl` call takes about a second). At the end, deletes
 * the vhost when it was created. The machine's `/` vhost is never used.
 */
export default function setup(project: TestProject): () => Promise<void> {
  const runDir = mkdtempSync(join(tmpdir(), 'stormguard-rabbitmq-run-'));
  const vhost = `${TEST_VHOST_PREFIX}${process.pid}-${Date.now()}`;
  project.provide('stormguardRabbitVhost', vhost);
  project.provide('stormguardRabbitRun', runDir);
  return async () => {
    try {
      if (existsSync(join(runDir, VHOST_READY_FILE))) await rabbitmqctl(['delete_vhost', vhost]);
    } finally {
      rmSync(runDir, { recursive: true, force: true });
    }
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    stormguardRabbitVhost: string;
    stormguardRabbitRun: string;
  }
}
