import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { cliRedisBed } from '../helpers/cli-redis.js';
import {
  expectSeededStatusReport,
  SEEDED_STATUS_TEXT,
  STATUS_ARGS,
  seedFlowStatus,
} from './flow-status-fixture.js';

const bed = cliRedisBed('flow', async (redis: Redis) => {
  await seedFlowStatus(new RedisFlowStore({ redis, prefix: 'cli' }));
});

describe('stormguard flow', () => {
  it('status shows the switch, and per dependency whether it is down, its paused workers and how many jobs are parked', async () => {
    const { code, stdout } = await bed.cli(...STATUS_ARGS, '--json');
    expect(code).toBe(0);
    expectSeededStatusReport(stdout);
    const human = await bed.cli('flow', 'status', 'search', '--queue', 'index', '--prefix', 'cli');
    expect(human.stdout).toBe(SEEDED_STATUS_TEXT);
  });

  it('off turns flow control off fleet-wide, on turns it back on', async () => {
    const off = await bed.cli('flow', 'off', '--prefix', 'cli');
    expect(off.code).toBe(0);
    expect(off.stdout).toMatch(/^flow control is OFF fleet-wide \(prefix cli\)/);
    const redis = new Redis(bed.server.connection);
    try {
      const store = new RedisFlowStore({ redis, prefix: 'cli' });
      expect(await store.switchedOff()).toBe(true);
      expect((await bed.cli('flow', 'on', '--prefix', 'cli', '--json')).stdout).toBe(
        `${JSON.stringify({ prefix: 'cli', on: true }, null, 2)}\n`,
      );
      expect(await store.switchedOff()).toBe(false);
    } finally {
      await redis.quit();
    }
  });
});
