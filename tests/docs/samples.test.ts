/**
 * Every `stormguard` command the README and docs/ show is run against the built CLI, with the servers it
 * needs started here, and its output sample is compared in shape with what it really prints; every flag
 * a page uses must be one the command accepts. The conventions are in docs/README.md.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerCommands } from '../../src/cli/commands/index.js';
import { CLI_BIN, ensureCliBuilt, ROOT } from '../helpers/cli.js';
import { postgresBed } from '../helpers/postgres-bed.js';
import { TestRedis } from '../helpers/redis-server.js';
import { FIXTURES } from './fixtures.js';
import { anchors, withToc } from './markdown.js';
import { commandsShown, promptLinesOutsideSh, type Sample, samplesIn, shapeMismatch } from './samples.js';
import { isExcerptOf, typeCheck, typeScriptSamplesIn } from './typescript-samples.js';

const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((n) => n.endsWith('.md'))
    .map((n) => `docs/${n}`),
];
const text = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const SAMPLES = PAGES.flatMap((file) => samplesIn(file, text(file)));
const RUN = SAMPLES.filter((s) => s.skip === undefined);
const SKIPPED = SAMPLES.filter((s) => s.skip !== undefined);
/** Blocks that may opt out of running; each must say why, and there should stay few. */
const MAX_SKIPPED = 3;

const postgres = postgresBed();
let redis: TestRedis;
let client: Redis;
let bin: string;

beforeAll(async () => {
  await ensureCliBuilt('simulate');
  redis = await TestRedis.start();
  client = new Redis(redis.connection);
  // `stormguard` on PATH, as `npm install` would put it.
  bin = mkdtempSync(join(tmpdir(), 'sg-docs-bin-'));
  writeFileSync(join(bin, 'stormguard'), `#!/bin/sh\nexec "${process.execPath}" "${CLI_BIN}" "$@"\n`);
  chmodSync(join(bin, 'stormguard'), 0o755);
}, 120_000);

afterAll(async () => {
  await client?.quit();
  await redis?.close();
  if (bin) rmSync(bin, { recursive: true, force: true });
});

/** The command with every `--redis`/`--postgres` value pointed at this file's servers. */
function pointedAtTestServers(command: string): string {
  const pointed = command
    .replace(/--redis(?:=|\s+)\S+/g, '--redis "$REDIS_URL"')
    .replace(/--postgres(?:=|\s+)\S+/g, '--postgres "$DATABASE_URL"');
  if (/:6379|:5432/.test(pointed)) throw new Error(`${command}: would reach a shared server`);
  return pointed;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function runShell(command: string, cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      'sh',
      ['-c', command],
      {
        cwd,
        timeout: 60_000,
        maxBuffer: 16 << 20,
        env: {
          ...process.env,
          PATH: `${bin}:${process.env.PATH ?? ''}`,
          REDIS_URL: redis.url,
          DATABASE_URL: postgres.url,
        },
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const label = (s: Sample) => `${s.file}:${s.line} ${s.commands.join(' ; ')}`;

describe('documentation samples', () => {
  it('are found on the pages (the README and docs/*.md)', () => {
    expect(RUN.length).toBeGreaterThanOrEqual(15);
  });

  it.each(PAGES)('%s writes every sample as a ```sh block (no "$ stormguard" in other blocks)', (file) => {
    expect(promptLinesOutsideSh(text(file))).toEqual([]);
  });

  it(`opt out of running only with a reason, and at most ${MAX_SKIPPED} of them`, () => {
    console.log(
      `documentation samples not run (${SKIPPED.length}):\n${SKIPPED.map((s) => `  ${label(s)}: ${s.skip}`).join('\n')}`,
    );
    expect(SKIPPED.length).toBeLessThanOrEqual(MAX_SKIPPED);
  });

  it.each(RUN.map((s) => [label(s), s] as const))(
    '%s runs, and prints what the sample shows',
    async (_, sample) => {
      await client.flushall();
      const cwd = mkdtempSync(join(tmpdir(), 'sg-docs-'));
      try {
        if (sample.fixture) {
          const fixture = FIXTURES[sample.fixture];
          if (!fixture)
            throw new Error(`${label(sample)}: no fixture "${sample.fixture}" in tests/docs/fixtures.ts`);
          await fixture({ redis: client, cwd });
        }
        for (const command of sample.commands) {
          const result = await runShell(pointedAtTestServers(command), cwd);
          expect(result.code, `exit code of ${command}\n${result.stderr}`).toBe(sample.exit);
          if (!sample.output) continue;
          const printed = (result.stdout || result.stderr).split('\n');
          expect(
            shapeMismatch(sample.output, printed),
            `${command}: the sample no longer matches`,
          ).toBeUndefined();
        }
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
    },
    90_000,
  );
});

describe('TypeScript samples', () => {
  const samples = PAGES.flatMap((file) => typeScriptSamplesIn(file, text(file)));
  const excerpts = samples.filter((s) => s.from !== undefined);

  it('are found on the pages', () => {
    expect(samples.length).toBeGreaterThanOrEqual(30);
  });

  // One tsc run for all of them: a run per sample would cost the suite minutes.
  it('type-check as strict TypeScript against the built package (npm test builds first)', async () => {
    await ensureCliBuilt('simulate');
    const failures = await typeCheck(
      ROOT,
      samples.filter((s) => s.from === undefined),
    );
    expect(failures).toEqual({});
  }, 180_000);

  it.each(excerpts.map((s) => [`${s.file}:${s.line}`, s] as const))(
    '%s is an excerpt of the file its marker names, which the build type-checks',
    (_, sample) => {
      expect(isExcerptOf(sample.source, text(sample.from as string))).toBe(true);
    },
  );

  it('tell an excerpt from a sample that was changed', () => {
    const source = 'export function f() {\n  a();\n  b();\n}\n';
    expect(isExcerptOf('a();\nb();', source)).toBe(true);
    expect(isExcerptOf('a();\nc();', source)).toBe(false);
  });
});

/** Every command of the CLI, by path (`dlq list`), with the long flags its help lists. */
function cliCommands(): Map<string, Set<string>> {
  const program = new Command('stormguard');
  registerCommands(program, { stdout: { write: () => true }, stderr: { write: () => true } });
  const out = new Map<string, Set<string>>();
  const walk = (command: Command, path: string[]) => {
    const flags = new Set(['--help', ...command.options.flatMap((o) => (o.long ? [o.long] : []))]);
    out.set(path.join(' '), flags);
    for (const sub of command.commands) walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  out.get('')?.add('--version');
  return out;
}

/**
 * The command paths a shown command names (`stormguard dlq list index` → `dlq list`; alternatives such as
 * `breaker force-open|reset` → each of them), and its flags. A placeholder where a subcommand belongs
 * (`breaker ${name}`, `dlq <command>`) names no path: there is nothing to check.
 */
function parseShown(command: string, known: Map<string, Set<string>>): { paths: string[]; flags: string[] } {
  const words = command.split(/\s+/).slice(1);
  let paths = [''];
  for (const word of words) {
    const next = word.split('|').flatMap((alt) => paths.map((p) => (p ? `${p} ${alt}` : alt)));
    if (next.length > 0 && next.every((p) => known.has(p))) {
      paths = next;
      continue;
    }
    const isGroup = paths.some((p) =>
      [...known.keys()].some((k) => (p === '' ? k !== '' : k.startsWith(`${p} `))),
    );
    if (isGroup && /^(\$\{|<)/.test(word)) paths = [];
    break;
  }
  const flags = [...command.matchAll(/(?:^|[\s[(|])(--[a-z][a-z0-9-]*)/g)].map((m) => m[1] as string);
  return { paths, flags };
}

/** What is wrong with the flags of the shown commands, one line each. */
function wrongFlags(commands: string[], known: Map<string, Set<string>>, skipRoot: boolean): string[] {
  const wrong: string[] = [];
  for (const command of commands) {
    const { paths, flags } = parseShown(command, known);
    for (const path of paths) {
      if (skipRoot && path === '') continue; // prose ("stormguard key prefix"), not a command
      const accepted = known.get(path) ?? new Set<string>();
      for (const flag of flags)
        if (!accepted.has(flag)) wrong.push(`${command}: stormguard ${path} has no ${flag}`);
    }
  }
  return wrong;
}

describe('documentation flags', () => {
  const known = cliCommands();

  it('the command tree is read from the CLI itself', () => {
    expect(known.get('budget watch')).toContain('--interval');
    expect(known.get('budget watch')).not.toContain('--window');
  });

  it.each(PAGES)('%s uses only flags its commands accept', (file) => {
    expect(wrongFlags(commandsShown(text(file)), known, false)).toEqual([]);
  });
});

/** The TypeScript files under `dir` (relative to the root), recursively. */
function sourcesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))
    .map((n) => join(dir, n));
}

/** `stormguard a b|c` → the command paths it names: `a b`, `a c`. */
function expandAlternatives(shown: string): string[] {
  return shown
    .split(' ')
    .reduce<string[]>(
      (paths, word) => paths.flatMap((path) => word.split('|').map((w) => (path ? `${path} ${w}` : w))),
      [''],
    );
}

describe('docs/cli.md', () => {
  const known = cliCommands();
  const leaves = [...known].filter(
    ([path]) => path !== '' && ![...known.keys()].some((other) => other.startsWith(`${path} `)),
  );
  // Each `## \`stormguard …\`` section, with the command paths its heading names.
  const sections = text('docs/cli.md')
    .split(/^## /m)
    .slice(1)
    .map((body) => {
      const heading = /^`stormguard ([^`]+)`/.exec(body)?.[1] ?? '';
      return { paths: expandAlternatives(heading.replace(/\s*[[<].*$/, '')), body };
    });

  it.each(leaves.map(([path, flags]) => [path, [...flags]] as const))(
    'documents `stormguard %s` and every flag it takes, in its section',
    (path, flags) => {
      const own = sections.filter((s) => s.paths.some((p) => path === p || path.startsWith(`${p} `)));
      expect(
        own.length,
        `a "## \`stormguard ${path}\`" section (or one of a command above it)`,
      ).toBeGreaterThan(0);
      const body = own.map((s) => s.body).join('\n');
      const shown = [
        ...body.matchAll(/stormguard ((?:[\w-]+(?:\|[\w-]+)*)(?: [\w-]+(?:\|[\w-]+)*)*)/g),
      ].flatMap((m) => expandAlternatives(m[1] as string));
      expect(
        shown.some((s) => s === path || s.startsWith(`${path} `)),
        `"stormguard ${path}" written in its section`,
      ).toBe(true);
      // --json and --help are said once for every command, at the top of the page.
      const undocumented = flags.filter(
        (flag) => flag !== '--help' && flag !== '--json' && !new RegExp(`${flag}(?![\\w-])`).test(body),
      );
      expect(undocumented).toEqual([]);
    },
  );
});

describe('commands shown outside the docs', () => {
  const known = cliCommands();

  // The examples print and comment commands to run beside them, and each CLI command's help has examples.
  it.each([...sourcesUnder('examples'), ...sourcesUnder('src/cli')])(
    '%s shows only flags its commands accept',
    (file) => {
      const commands = [...text(file).matchAll(/stormguard [a-z][^'`"\n]*/g)].map((m) => m[0]);
      expect(wrongFlags(commands, known, true)).toEqual([]);
    },
  );
});

describe('docs/benchmarks.md', () => {
  const sections = text('docs/benchmarks.md').split(/^## /m).slice(1);

  it.each(sections.map((s) => [s.slice(0, s.indexOf('\n')), s] as const))(
    '"%s" says it was measured, on what machine, and with what command',
    (_, section) => {
      expect(section).toMatch(/^- \*\*Measured\*\* on .*\b(\d+-core|2-core)\b/m);
      expect(section).toMatch(/^- \*\*Command:\*\* `[^`]+`/m);
    },
  );
});

describe('documentation pages', () => {
  // docs/README.md is the table of contents of the pages.
  it.each(PAGES.filter((p) => p.startsWith('docs/') && p !== 'docs/README.md'))(
    '%s has an up-to-date table of contents',
    (file) => {
      const page = text(file);
      expect(page, 'a table of contents (<!-- toc --> … <!-- /toc -->)').toMatch(/^<!-- toc -->$/m);
      expect(page, 'stale: run npx tsx tests/docs/toc.ts').toBe(withToc(page));
    },
  );

  it.each(PAGES)('%s links only to pages and headings that exist', (file) => {
    const broken: string[] = [];
    const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : '';
    for (const m of text(file).matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = m[1] as string;
      if (/^[a-z]+:/.test(link)) continue;
      const [path = '', hash] = link.split('#');
      const target = path ? join(dir, path) : file;
      let page: string;
      try {
        page = readFileSync(join(ROOT, target), 'utf8');
      } catch {
        broken.push(`${link}: no file ${target}`);
        continue;
      }
      if (hash && target.endsWith('.md') && !anchors(page).includes(hash))
        broken.push(`${link}: no heading #${hash}`);
    }
    expect(broken).toEqual([]);
  });
});

describe('the output comparison', () => {
  // The test must be able to fail: a sample that drifted from what the command prints is caught.
  const printed = [
    'index: 3 of 3 matching (3 in the queue), oldest first',
    'ID  JOB       NAME     REASON            DEPENDENCY  ATTEMPTS  REPLAYS  DEAD-LETTERED  DETAIL',
    '1   doc-1187  reindex  budget-exhausted  search      2         0        12m 4s ago     the search retry budget is exhausted',
  ];

  it('matches a sample with other numbers, durations and column widths', () => {
    const sample = [
      'index: 1 of 20 matching (715 in the queue), oldest first',
      'ID JOB NAME REASON DEPENDENCY ATTEMPTS REPLAYS DEAD-LETTERED DETAIL',
      '17  doc-9  reindex  budget-exhausted  search  1  0  3s ago  the search retry budget is exhausted',
    ];
    expect(shapeMismatch(sample, printed)).toBeUndefined();
  });

  it('refuses a sample with a column the command no longer prints, or a line too many', () => {
    const dropped = [
      printed[0] as string,
      'ID  JOB  NAME  REASON  ATTEMPTS  DEAD-LETTERED  DETAIL',
      printed[2] as string,
    ];
    expect(shapeMismatch(dropped, printed)).toMatch(/line 2 differs/);
    expect(shapeMismatch([...printed, 'more: --after 1_5'], printed)).toBeDefined();
  });

  it('lets "…" stand for any number of lines', () => {
    expect(shapeMismatch([printed[0] as string, '…'], printed)).toBeUndefined();
    expect(shapeMismatch(['…', printed[2] as string], printed)).toBeUndefined();
  });
});
