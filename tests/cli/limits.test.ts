/**
 * `stormguard limits status|set|pause|resume|reset` as a user runs it (the built CLI), against a real
 * redis-server that a worker process's exchanges have filled: what status prints, what each change
 * leaves in the flow store and in the audit log, and bad input (exit 2, one line naming the flag).
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisAuditLog } from '../../src/redis/audit-log.js';
import { RedisFlowStore } from '../../src/redis/flow-store.js';
import type { LimitExchange } from '../../src/runtime/limits/store.js';
import { cliRedisBed } from '../helpers/cli-redis.js';

const PREFIX = 'cli';

/** A worker process's exchange: its code's limits, and `take` leases of cost 1. */
function exchange(declared: LimitExchange['declared'], take: number): LimitExchange {
  return {
    holder: 'host-a:4242',
    declared,
    // Long enough that the seeded leases and declarations outlive the whole file.
    leaseMs: 600_000,
    give: [],
    renew: [],
    take: Array.from({ length: take }, (_, i) => ({ lease: `host-a:4242:${i}`, cost: 1 })),
    probes: 1,
    ramp: { slowStartMs: 30_000, floorPerSecond: 1 },
  };
}

const bed = cliRedisBed('limits', async (redis: Redis) => {
  const store = new RedisFlowStore({ redis, prefix: PREFIX });
  // openai: 25 in flight at most, all 25 taken; crm: 5 a second, held by a 429's Retry-After for 10 minutes.
  await store.exchangeLimits('openai', exchange({ maxInFlight: 25 }, 25));
  await store.exchangeLimits('crm', exchange({ maxRatePerSecond: 5 }, 0));
  await store.holdLimits('crm', 600_000, 'retry-after');
});

/** Runs `fn` with the flow store and audit log the CLI writes to. */
async function withStores<T>(fn: (s: { flow: RedisFlowStore; audit: RedisAuditLog }) => Promise<T>) {
  const redis = new Redis(bed.server.connection);
  try {
    return await fn({
      flow: new RedisFlowStore({ redis, prefix: PREFIX }),
      audit: new RedisAuditLog({ redis, prefix: PREFIX }),
    });
  } finally {
    redis.disconnect();
  }
}

describe('stormguard limits status', () => {
  it('--json lists each limited dependency: in flight against the cap, the rate, a hold', async () => {
    const { code, stdout } = await bed.cli('limits', 'status', '--prefix', PREFIX, '--json');
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as { prefix: string; dependencies: Record<string, unknown>[] };
    expect(report.prefix).toBe(PREFIX);
    expect(report.dependencies.map((d) => d.dependency)).toEqual(['crm', 'openai']);
    const [crm, openai] = report.dependencies;
    expect(openai).toEqual({
      dependency: 'openai',
      inFlight: 25,
      declared: { maxInFlight: 25 },
      effective: { maxInFlight: 25 },
      probing: false,
      paused: false,
      pinned: true,
    });
    expect(crm).toMatchObject({
      inFlight: 0,
      effective: { maxRatePerSecond: 5 },
      hold: { reason: 'retry-after' },
      paused: false,
      pinned: false,
    });
    const hold = crm?.hold as { untilMs: number; setAtMs: number; remainingMs: number };
    expect(hold.untilMs - hold.setAtMs).toBe(600_000);
    expect(hold.remainingMs).toBeGreaterThan(0);
    expect(hold.remainingMs).toBeLessThanOrEqual(600_000);
  });

  it('prints one block per dependency for people, and names a dependency without limits', async () => {
    const { code, stdout } = await bed.cli('limits', 'status', '--prefix', PREFIX);
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe('crm: 0 in flight (no cap), at most 5/s');
    expect(lines[1]).toMatch(/^ {2}held until \d\d:\d\d:\d\d UTC by Retry-After \(in (9m \d+s|10m)\)$/);
    expect(lines[2]).toBe('openai: 25/25 in flight, no rate limit (at the cap: calls wait for a slot)');

    const one = await bed.cli('limits', 'status', 'openai', '--prefix', PREFIX);
    expect(one.stdout).toBe('openai: 25/25 in flight, no rate limit (at the cap: calls wait for a slot)\n');
    const none = await bed.cli('limits', 'status', 'mail', '--prefix', PREFIX);
    expect([none.code, none.stdout]).toEqual([
      0,
      'mail: no limits (no worker declares any, no override, no hold)\n',
    ]);
    const empty = await bed.cli('limits', 'status', '--prefix', 'nothing-here');
    expect(empty.stdout).toBe(
      'no limits under prefix "nothing-here" (no worker declares any, no override, no hold)\n',
    );
  });
});

describe('stormguard limits set|pause|resume|reset', () => {
  it('pause stops the dependency fleet-wide with an expiry, resume lifts only the pause, reset goes back to code; each is audited', async () => {
    const set = await bed.cli(
      'limits',
      'set',
      'openai',
      '--max-in-flight',
      '10',
      '--reason',
      'vendor asked us to slow down',
      '--by',
      'alice',
      '--prefix',
      PREFIX,
    );
    expect(set.code).toBe(0);
    expect(set.stdout).toMatch(
      /^openai: limits set fleet-wide: at most 10 in flight, no rate limit, until a reset \(workers follow within their stateCacheMs; audit entry \d+\)\n$/,
    );

    const pause = await bed.cli(
      'limits',
      'pause',
      'openai',
      '--reason',
      'vendor incident, 429s since 14:00',
      '--expires',
      '30m',
      '--by',
      'bob',
      '--prefix',
      PREFIX,
      '--json',
    );
    expect(pause.code).toBe(0);
    const paused = JSON.parse(pause.stdout) as {
      dependency: string;
      action: string;
      state: { override: Record<string, unknown>; nowMs: number };
      audit: { action: string; by: string };
    };
    expect(paused).toMatchObject({
      prefix: PREFIX,
      dependency: 'openai',
      action: 'pause',
      state: {
        override: { paused: true, maxInFlight: 10, by: 'bob', reason: 'vendor incident, 429s since 14:00' },
      },
      audit: { action: 'limits.pause', by: 'bob' },
    });
    expect((paused.state.override.expiresAtMs as number) - paused.state.nowMs).toBe(1_800_000);

    const status = await bed.cli('limits', 'status', 'openai', '--prefix', PREFIX);
    expect(status.stdout).toMatch(
      /^openai: 25\/10 in flight, no rate limit \(at the cap: calls wait for a slot\)\n {2}paused, maxInFlight 10 \(code: 25\) by bob: vendor incident, 429s since 14:00 \(expires \d\d:\d\d:\d\d UTC, in (29m \d+s|30m)\)\n$/,
    );

    const resume = await bed.cli(
      'limits',
      'resume',
      'openai',
      '--reason',
      'incident over',
      '--prefix',
      PREFIX,
    );
    expect(resume.code).toBe(0);
    expect(resume.stdout).toMatch(/^openai: resumed: at most 10 in flight, no rate limit \(/);

    // A hold on openai too: reset lifts it with the override.
    await withStores(({ flow }) => flow.holdLimits('openai', 60_000, 'retry-after'));
    const reset = await bed.cli(
      'limits',
      'reset',
      'openai',
      '--reason',
      'back to the code',
      '--prefix',
      PREFIX,
    );
    expect(reset.code).toBe(0);
    expect(reset.stdout).toMatch(
      /^openai: back to the workers' code: at most 25 in flight, no rate limit; no override, no hold \(/,
    );

    await withStores(async ({ flow, audit }) => {
      const state = await flow.limitState('openai');
      expect([state.override, state.hold, state.effective]).toEqual([
        undefined,
        undefined,
        { maxInFlight: 25 },
      ]);
      const { entries } = await audit.list({ limit: 10 });
      expect(entries.map((e) => [e.action, e.target, e.by, e.reason])).toEqual([
        ['limits.reset', 'openai', 'anonymous', 'back to the code'],
        ['limits.resume', 'openai', 'anonymous', 'incident over'],
        ['limits.pause', 'openai', 'bob', 'vendor incident, 429s since 14:00'],
        ['limits.set', 'openai', 'alice', 'vendor asked us to slow down'],
      ]);
      expect(entries[0]?.detail).toEqual({
        from: { maxInFlight: 10, paused: false },
        to: { maxInFlight: 25, paused: false },
        holdLifted: true,
      });
    });
  });

  it('bad input exits 2 with one line naming the flag, and changes nothing', async () => {
    const cases: [string[], RegExp][] = [
      [['pause', 'openai'], /^error: required option '--reason <text>' not specified/],
      [['pause', 'openai', '--reason', ' '], /^stormguard: --reason: the value is empty/],
      [
        ['set', 'openai', '--reason', 'x'],
        /^stormguard: set: give --max-in-flight and\/or --max-rate-per-second/,
      ],
      [
        ['set', 'openai', '--reason', 'x', '--max-in-flight', '0'],
        /^stormguard: --max-in-flight: 0 is not a whole number from 1 to 1000000/,
      ],
      [
        ['set', 'openai', '--reason', 'x', '--max-in-flight', 'ten'],
        /^stormguard: --max-in-flight: "ten" is not a number; write it like 25 or 0\.5/,
      ],
      [
        ['set', 'openai', '--reason', 'x', '--max-rate-per-second', '-2'],
        /^stormguard: --max-rate-per-second: -2 is not a number above 0/,
      ],
      [
        ['pause', 'openai', '--reason', 'x', '--expires', 'soon'],
        /^stormguard: --expires: "soon" is not a duration/,
      ],
      [
        ['pause', 'openai', '--reason', 'x', '--expires', '10ms'],
        /^stormguard: --expires: 10 ms is not a duration from 1s/,
      ],
      [['resume', 'openai', '--reason', 'x', '--expires', '5m'], /^error: unknown option '--expires'/],
    ];
    for (const [args, message] of cases) {
      const { code, stdout, stderr } = await bed.cli(
        'limits',
        ...(args as [string, ...string[]]),
        '--prefix',
        PREFIX,
      );
      expect([args, code, stdout]).toEqual([args, 2, '']);
      expect(stderr).toMatch(message);
    }
    await withStores(async ({ flow }) => expect((await flow.limitState('openai')).override).toBeUndefined());
  });

  it('--help offers --json and ends with examples', async () => {
    for (const command of ['status', 'set', 'pause', 'resume', 'reset']) {
      const { code, stdout } = await bed.cli('limits', command, '--help');
      expect(code).toBe(0);
      expect(stdout).toMatch(/^ {2}--json\b/m);
      expect(stdout).toMatch(/\nExamples:\n {2}\$ stormguard limits /);
    }
  });
});
