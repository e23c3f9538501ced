import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { resolveBreakerOptions } from '../../src/breaker/options.js';
import { RedisAuditLog } from '../../src/redis/audit-log.js';
import { RedisBreakerStore } from '../../src/redis/breaker-store.js';
import { cli } from '../helpers/cli.js';
import { cliRedisBed } from '../helpers/cli-redis.js';
import { freePort } from '../helpers/redis-server.js';

const bed = cliRedisBed('breaker', async (redis: Redis) => {
  const store = new RedisBreakerStore({ redis, prefix: 'cli' });
  const options = resolveBreakerOptions({ consecutiveFailures: 2, coolDownMs: 120_000 });
  await store.record('search', 'failure', options);
  await store.record('search', 'failure', options);
  await store.record('mail', 'success', options);
  await store.record('mail', 'failure', options);
});

describe('stormguard breaker status', () => {
  it('--json lists every dependency with its state, window counts and open/half-open times', async () => {
    const { code, stdout } = await bed.cli('breaker', 'status', '--prefix', 'cli', '--json');
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as { prefix: string; breakers: Array<Record<string, unknown>> };
    expect(report.prefix).toBe('cli');
    expect(report.breakers.map((b) => [b.dependency, b.state])).toEqual([
      ['mail', 'closed'],
      ['search', 'open'],
    ]);
    const [mail, search] = report.breakers as [Record<string, number>, Record<string, number>];
    expect(mail).toMatchObject({ failures: 1, volume: 2, degraded: false });
    expect(search).toMatchObject({ failures: 2, volume: 2, consecutiveFailures: 2 });
    expect(search.halfOpenAtMs! - search.openedAtMs!).toBe(120_000);
  });

  it('prints a table for people', async () => {
    const { code, stdout } = await bed.cli('breaker', 'status', '--prefix', 'cli');
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^DEPENDENCY\s+STATE\s+FAILURES\/VOLUME\s+IN A ROW\s+PROBES\s+OPENED\s+HALF-OPENS$/,
    );
    expect(lines[1]).toMatch(/^mail\s+closed\s+1\/2 \(50%\)\s+1\s+-\s+-\s+-$/);
    expect(lines[2]).toMatch(
      /^search\s+open\s+2\/2 \(100%\)\s+2\s+-\s+\S+Z \(.+ ago\)\s+\S+Z \(in (1m \d+s|2m)\)$/,
    );
  });

  it('says so when a prefix holds no breaker', async () => {
    const { code, stdout } = await bed.cli('breaker', 'status', '--prefix', 'nothing-here');
    expect(code).toBe(0);
    expect(stdout).toBe('no circuit breaker state under prefix "nothing-here"\n');
  });

  it('rejects a bad prefix with exit code 2 and one line, before connecting', async () => {
    const { code, stdout, stderr } = await bed.cli('breaker', 'status', '--prefix', '');
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^stormguard: --prefix: the value is empty/);
  });

  it('fails with exit code 1 and a clear message when Redis cannot be reached', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const { code, stderr } = await cli('breaker', 'status', '--redis', url);
    expect(code).toBe(1);
    expect(stderr).toContain(`cannot reach Redis at ${url}`);
  });
});

describe('stormguard breaker force-open|force-close|reset', () => {
  it('holds a breaker open fleet-wide, says so in status, records it in the audit log, and resets it', async () => {
    const forced = await bed.cli(
      'breaker',
      'force-open',
      'crm',
      '--prefix',
      'cli-override',
      '--reason',
      'crm migration until 14:00',
      '--by',
      'alice',
    );
    expect(forced.code).toBe(0);
    expect(forced.stdout).toMatch(/^the crm breaker is held open until a reset \(.*audit entry 1\)\n$/);

    const status = await bed.cli('breaker', 'status', '--prefix', 'cli-override');
    const lines = status.stdout.trimEnd().split('\n');
    expect(lines[1]).toMatch(/^crm\s+open\s+0\/0\s+0\s+-\s+\S+Z \(.+\)\s+held$/);
    expect(lines[2]).toMatch(
      /^"crm": held open by alice since \S+Z \(.+\): crm migration until 14:00; stormguard breaker reset lifts it$/,
    );

    const redis = new Redis(bed.server.connection);
    try {
      const store = new RedisBreakerStore({ redis, prefix: 'cli-override' });
      const refused = await store.acquire('crm', resolveBreakerOptions());
      expect(refused.allowed).toBe(false);

      const reset = await bed.cli(
        'breaker',
        'reset',
        'crm',
        '--prefix',
        'cli-override',
        '--reason',
        'done',
        '--json',
      );
      expect(reset.code).toBe(0);
      const report = JSON.parse(reset.stdout) as { snapshot: { state: string }; audit: { id: string } };
      expect(report.snapshot.state).toBe('closed');
      expect(report.audit.id).toBe('2');
      expect((await store.acquire('crm', resolveBreakerOptions())).allowed).toBe(true);

      const { entries } = await new RedisAuditLog({ redis, prefix: 'cli-override' }).list({ limit: 10 });
      expect(entries.map((e) => [e.by, e.action, e.target, e.reason, e.detail])).toEqual([
        ['anonymous', 'breaker.reset', 'crm', 'done', { from: 'open', to: 'closed' }],
        ['alice', 'breaker.force-open', 'crm', 'crm migration until 14:00', { from: 'closed', to: 'open' }],
      ]);
    } finally {
      await redis.quit();
    }
  });

  it('refuses an override without a reason with exit code 2, before connecting', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const missing = await cli('breaker', 'force-close', 'crm', '--redis', url);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--reason/);
    const blank = await cli('breaker', 'force-close', 'crm', '--redis', url, '--reason', ' ');
    expect(blank.code).toBe(2);
    expect(blank.stderr).toMatch(/--reason: the value is empty/);
  });
});
