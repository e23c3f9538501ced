import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildOnce } from './build-once.js';
import { FIXTURE_CACHE, packedTarball } from './packed-tarball.js';

const run = promisify(execFile);

/** The packages whose installed versions a fixture reports (the peers stormguard supports). */
export const PEERS = ['amqplib', 'bullmq', 'ioredis', 'pg', 'prom-client'] as const;

/** What a fixture project installs next to stormguard. */
export interface FixtureSpec {
  /** Names the fixture in folder names and messages, e.g. `bullmq5-redis`. */
  readonly name: string;
  /** The packages a user names beside stormguard, e.g. `['bullmq@5', 'ioredis@5']`; none for the core. */
  readonly packages: readonly string[];
}

/** A fresh npm project with the packed stormguard installed as a user installs it. */
export interface FixtureProject {
  readonly spec: FixtureSpec;
  /** The project's folder: its package.json and node_modules. */
  readonly dir: string;
  /** The command that installed it, as a user would type it (`npm install stormguard-….tgz bullmq@5 …`). */
  readonly command: string;
  /** Each peer's installed version at the top of node_modules, or undefined when it is not installed. */
  readonly versions: Readonly<Record<(typeof PEERS)[number], string | undefined>>;
}

/**
 * A project outside the repository that ran `npm install <stormguard tarball> ...spec.packages` with
 * no flags, as a new user would (only npm's cache settings added: `--prefer-offline --no-audit
 * --no-fund`). Installed once per tarball and spec, and kept between runs; the install test and the
 * matrix cells share it. Throws an error carrying npm's own output (an ERESOLVE, say) when the install
 * fails, so the test that needed the project fails and says why.
 *
 * @example
 * const fixture = await fixtureProject({ name: 'bullmq5-redis', packages: ['bullmq@5', 'ioredis@5'] });
 * fixture.versions.bullmq; // '5.81.5'
 */
export async function fixtureProject(spec: FixtureSpec): Promise<FixtureProject> {
  const tarball = await packedTarball();
  const key = createHash('sha256')
    .update([tarball, process.version, ...spec.packages].join('\0'))
    .digest('hex')
    .slice(0, 12);
  const dir = join(FIXTURE_CACHE, `${spec.name}-${key}`);
  const args = ['install', tarball, ...spec.packages];
  await buildOnce(dir, (target) => install(target, spec, args), 300_000);
  return { spec, dir, command: `npm ${args.join(' ')}`, versions: installedVersions(dir) };
}

async function install(dir: string, spec: FixtureSpec, args: readonly string[]): Promise<void> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: `fixture-${spec.name}`, private: true, type: 'module' }, null, 2)}\n`,
  );
  const env = withoutNpmConfigOverrides();
  await refuseLenientPeers(dir, env);
  try {
    await run('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: dir,
      maxBuffer: 16 << 20,
      env,
    });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(
      `the ${spec.name} fixture could not install: \`npm ${args.join(' ')}\` in ${dir} failed:\n${stderr}${stdout}`,
    );
  }
}

/**
 * Fails when this machine's npm is set to ignore peer conflicts (an .npmrc with legacy-peer-deps or
 * force): an install there would pass where a user's fails with ERESOLVE.
 */
async function refuseLenientPeers(dir: string, env: NodeJS.ProcessEnv): Promise<void> {
  for (const setting of ['legacy-peer-deps', 'force']) {
    const { stdout } = await run('npm', ['config', 'get', setting], { cwd: dir, env });
    if (stdout.trim() !== 'false') {
      throw new Error(
        `npm is configured with ${setting}=${stdout.trim()} (an .npmrc or npm_config_* variable): ` +
          'remove it, or the install test cannot see the peer conflicts a user would',
      );
    }
  }
}

/** npm settings a fresh shell may have in its environment too: where packages come from and are cached. */
const KEPT_NPM_SETTINGS = new Set(['npm_config_registry', 'npm_config_cache', 'npm_config_userconfig']);

/**
 * The environment without the settings inherited from the `npm test` that started us (npm exports its
 * whole configuration to scripts as npm_config_*), so the fixture installs as a fresh shell would.
 */
function withoutNpmConfigOverrides(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^npm_/i.test(name) || KEPT_NPM_SETTINGS.has(name.toLowerCase()),
    ),
  );
}

function installedVersions(dir: string): FixtureProject['versions'] {
  const versions = {} as Record<(typeof PEERS)[number], string | undefined>;
  for (const name of PEERS) versions[name] = packageVersion(dir, name);
  return versions;
}

/** The version of `name` in `dir`'s node_modules, or undefined when it is not installed there. */
export function packageVersion(dir: string, name: string): string | undefined {
  const manifest = join(dir, 'node_modules', name, 'package.json');
  if (!existsSync(manifest)) return undefined;
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/**
 * A new folder inside the fixture for one run's files (scripts, copied tests): whatever runs from it
 * resolves packages from the fixture's node_modules, as the user's own code would. The caller removes it.
 *
 * @example
 * const dir = runFolder(fixture, 'small-worker-');
 */
export function runFolder(fixture: FixtureProject, prefix: string): string {
  const runs = join(fixture.dir, 'runs');
  mkdirSync(runs, { recursive: true });
  // Failed runs are kept for their output; an hour later they have been read.
  for (const old of readdirSync(runs)) {
    const path = join(runs, old);
    if (statSync(path).mtimeMs < Date.now() - 60 * 60_000) rmSync(path, { recursive: true, force: true });
  }
  return mkdtempSync(join(runs, prefix));
}
