import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { missingPeer, missingPeerMessage } from '../../src/cli/peers.js';
import { fixtureProject } from '../helpers/fixture-project.js';
import { FIXTURES } from '../matrix/cells.js';

// The CLI's optional peers (ioredis, pg, bullmq, prom-client) are installed only by users who need them:
// a command that needs one that is missing names the command, the peer and the install line, instead of
// Node's "Cannot find package 'ioredis'".

const run = promisify(execFile);
const INSTALL_TIMEOUT_MS = 600_000;

/** The error Node raises when `specifier` is imported from a folder with no node_modules (in a plain node). */
async function importErrorOf(specifier: string): Promise<unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'stormguard-peer-'));
  try {
    writeFileSync(
      join(dir, 'entry.mjs'),
      `try { await import(${JSON.stringify(specifier)}); console.log('null'); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }\n`,
    );
    const { stdout } = await run(process.execPath, [join(dir, 'entry.mjs')], { cwd: dir });
    const raised = JSON.parse(stdout) as { code?: string; message: string } | null;
    return raised && Object.assign(new Error(raised.message), { code: raised.code });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('a missing optional peer', () => {
  it("is read from Node's own import error, for a package and a subpath; other errors are not one", async () => {
    expect(missingPeer(await importErrorOf('ioredis'))).toBe('ioredis');
    expect(missingPeer(await importErrorOf('pg'))).toBe('pg');
    expect(missingPeer(await importErrorOf('bullmq/dist/esm/index.js'))).toBe('bullmq');
    expect(missingPeer(await importErrorOf('@opentelemetry/api'))).toBe('@opentelemetry/api');
    expect(missingPeer(await importErrorOf('left-pad'))).toBeUndefined();
    expect(missingPeer(await importErrorOf('./missing-file.js'))).toBeUndefined();
    expect(missingPeer(new Error("Cannot find package 'ioredis'"))).toBeUndefined();
  });

  it('is named with the command, the flag that needs it, and the install line', () => {
    expect(missingPeerMessage(['budget', 'status'], 'ioredis')).toBe(
      'stormguard budget status --redis needs ioredis: npm install ioredis',
    );
    expect(missingPeerMessage(['breaker', 'status'], 'pg')).toBe(
      'stormguard breaker status --postgres needs pg: npm install pg',
    );
    expect(missingPeerMessage(['dlq', 'replay'], 'bullmq')).toBe(
      'stormguard dlq replay needs bullmq: npm install bullmq',
    );
  });

  it('stops a command of a project without its peers with that line (exit 1)', {
    timeout: INSTALL_TIMEOUT_MS,
  }, async () => {
    const fixture = await fixtureProject(FIXTURES.core);
    expect(fixture.versions).toMatchObject({ ioredis: undefined, pg: undefined, bullmq: undefined });
    const bin = join(fixture.dir, 'node_modules', '.bin', 'stormguard');
    const outcome = async (...args: string[]) =>
      run(bin, args, { cwd: fixture.dir }).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (error: { code?: number; stdout?: string; stderr?: string }) => ({
          code: error.code,
          stdout: error.stdout,
          stderr: error.stderr,
        }),
      );
    expect(await outcome('budget', 'status', '--redis', 'redis://127.0.0.1:6390')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'stormguard budget status --redis needs ioredis: npm install ioredis\n',
    });
    expect(await outcome('breaker', 'status', '--postgres', 'postgres://app@127.0.0.1:5499/shop')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'stormguard breaker status --postgres needs pg: npm install pg\n',
    });
  });
});
