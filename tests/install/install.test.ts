/**
 * stormguard installs as a new user installs it: `npm pack`, then a fresh project that runs `npm install`
 * of the tarball with no flags, alone (the pure core) and beside each BullMQ major, and runs a small
 * worker end to end against a real redis-server.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import {
  type FixtureProject,
  fixtureProject,
  PEERS,
  packageVersion,
  runFolder,
} from '../helpers/fixture-project.js';
import { TestRedis } from '../helpers/redis-server.js';
import { FIXTURES } from '../matrix/cells.js';
import { packagesImportedFrom } from './import-graph.js';

const run = promisify(execFile);
const INSTALL_TIMEOUT_MS = 300_000;

/**
 * Runs `node <script> ...args` from a new folder inside the fixture, as that project's own code; with
 * `type`, the folder has a package.json saying so (`commonjs`: its .js files are CommonJS, as in a project
 * that never opted into ES modules).
 */
async function runInFixture(
  fixture: FixtureProject,
  script: string,
  args: string[],
  type?: 'commonjs',
): Promise<string> {
  const dir = runFolder(fixture, 'install-check-');
  try {
    if (type) writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ private: true, type })}\n`);
    const copy = join(dir, script);
    copyFileSync(fileURLToPath(new URL(`./fixtures/${script}`, import.meta.url)), copy);
    const { stdout } = await run(process.execPath, [copy, ...args], { cwd: dir, timeout: 60_000 });
    return stdout;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${script} failed in the ${fixture.spec.name} fixture:\n${stderr}${stdout}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An optional peer, or any OpenTelemetry package: what the core must never import. */
const isOptional = (name: string) =>
  (PEERS as readonly string[]).includes(name) || name.startsWith('@opentelemetry/');

describe('the pure core', () => {
  it('imports no BullMQ, Redis client, PostgreSQL client, prom-client or OpenTelemetry, in its code or its types', () => {
    for (const entry of ['dist/index.js', 'dist/index.d.ts']) {
      const imported = packagesImportedFrom(join(ROOT, entry));
      expect([...imported].filter(isOptional), entry).toEqual([]);
    }
  });

  it('stormguard/opentelemetry imports @opentelemetry/api and no other optional peer', () => {
    for (const entry of ['dist/opentelemetry/index.js', 'dist/opentelemetry/index.d.ts']) {
      const imported = packagesImportedFrom(join(ROOT, entry));
      expect([...imported].filter(isOptional), entry).toEqual(['@opentelemetry/api']);
    }
  });

  it('installs alone, with none of the optional peers, and works', {
    timeout: INSTALL_TIMEOUT_MS,
  }, async () => {
    const fixture = await fixtureProject(FIXTURES.core);
    expect(fixture.versions).toEqual({
      amqplib: undefined,
      bullmq: undefined,
      ioredis: undefined,
      pg: undefined,
      'prom-client': undefined,
    });
    expect(JSON.parse(await runInFixture(fixture, 'core-only.mjs', []))).toEqual({
      delays: [100, 200, 400],
      decision: { action: 'dead-letter', reason: 'max-attempts' },
    });
    const { stdout } = await run(join(fixture.dir, 'node_modules', '.bin', 'stormguard'), [
      'plan',
      '--window',
      '60s',
      '--base',
      '2s',
      '--cap',
      '600s',
      '--json',
    ]);
    expect(JSON.parse(stdout)).toMatchObject({ retries: 5, maxAttempts: 6 });
  });
});

describe.each([
  { fixture: FIXTURES.bullmq5Redis, bullmq: 5, ioredis: 5 },
  { fixture: FIXTURES.bullmq6Redis, bullmq: 6, ioredis: 6 },
])('beside BullMQ $bullmq and ioredis $ioredis', ({ fixture: spec, bullmq, ioredis }) => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.close());

  it(`installs without flags: npm install <tarball> ${spec.packages.join(' ')}`, {
    timeout: INSTALL_TIMEOUT_MS,
  }, async () => {
    const fixture = await fixtureProject(spec);
    expect(major(fixture.versions.bullmq), fixture.command).toBe(bullmq);
    expect(major(fixture.versions.ioredis), fixture.command).toBe(ioredis);
    // stormguard uses the project's BullMQ and ioredis, not copies of its own.
    const own = join(fixture.dir, 'node_modules', 'stormguard');
    expect(packageVersion(own, 'bullmq')).toBeUndefined();
    expect(packageVersion(own, 'ioredis')).toBeUndefined();
  });

  it('runs a small worker end to end: retried jobs complete, a broken one is dead-lettered', {
    timeout: INSTALL_TIMEOUT_MS,
  }, async () => {
    const fixture = await fixtureProject(spec);
    const outcome = JSON.parse(await runInFixture(fixture, 'small-worker.mjs', [redis.url]));
    expect(outcome).toEqual({
      attempt: 7,
      retry: 2,
      completed: 4,
      'dead-letter': ['permanent'],
      results: [10, 20, 30, 40],
    });
  });
});

function major(version: string | undefined): number | undefined {
  return version === undefined ? undefined : Number(version.split('.')[0]);
}

describe('from a CommonJS project', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.close());

  it('require() loads every entry point whose peers are installed, and a worker runs end to end', {
    timeout: INSTALL_TIMEOUT_MS,
  }, async () => {
    const fixture = await fixtureProject(FIXTURES.bullmq6Redis);
    const outcome = JSON.parse(await runInFixture(fixture, 'commonjs-worker.js', [redis.url], 'commonjs'));
    expect(outcome).toEqual({
      entries: {
        stormguard: 'loaded',
        'stormguard/testing': 'loaded',
        'stormguard/config': 'loaded',
        'stormguard/store-kit': 'loaded',
        'stormguard/bullmq': 'loaded',
        'stormguard/amqp': 'needs amqplib',
        'stormguard/prometheus': 'needs prom-client',
        'stormguard/opentelemetry': 'needs @opentelemetry/api',
        'stormguard/redis': 'loaded',
        'stormguard/sim': 'loaded',
        'stormguard/dashboard': 'loaded',
        'stormguard/postgres': 'needs pg',
      },
      ended: [40, 'dead-letter'],
      deadLetters: ['permanent'],
    });
  });
});
