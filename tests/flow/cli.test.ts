import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import { cliRedisBed } from '../helpers/cli-redis.js';

const bed = cliRedisBed('flow', async (redis: Redis) => {
  const store = new RedisFlowStore({ redis, prefix: 'cli' });
  await store.markDown('search');
  for (const id of ['1', '2', '3']) await store.park('search', 'index', id, 60_000);
  await store.notePaused('search', 'index', 'host-a:1:1', 30_000, 600_000);
  await store.notePaused('search', 'crawl', 'host-b:2:1', 30_000, 600_000);
});

describe('stormguard flow', () => {
  it('status shows the switch, and per dependency whether it is down, its paused workers and how many jobs are parked', async () => {
    const { code, stdout } = await bed.cli(
      'flow',
      'status',
      'search',
      'mail',
      '--queue',
      'index',
      '--prefix',
      'cli',
      '--json',
    );
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    // Server time: the pause's length is what was recorded.
    for (const paused of report.dependencies[0].pausedWorkers)
      expect(paused.untilMs - paused.sinceMs).toBe(30_000);
    expect(report).toEqual({
      prefix: 'cli',
      on: true,
      queue: 'index',
      dependencies: [
        {
          dependency: 'search',
          down: true,
          parked: 3,
          pausedWorkers: [
            {
              queue: 'crawl',
              worker: 'host-b:2:1',
              sinceMs: expect.any(Number),
              untilMs: expect.any(Number),
            },
            {
              queue: 'index',
              worker: 'host-a:1:1',
              sinceMs: expect.any(Number),
              untilMs: expect.any(Number),
            },
          ],
        },
        { dependency: 'mail', down: false, parked: 0, pausedWorkers: [] },
      ],
    });
    const human = await bed.cli('flow', 'status', 'search', '--queue', 'index', '--prefix', 'cli');
    expect(human.stdout).toBe(
      'flow control is on fleet-wide (prefix cli)\n' +
        'search: down, 3 parked in index, 2 workers paused (crawl: host-b:2:1, index: host-a:1:1)\n',
    );
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
