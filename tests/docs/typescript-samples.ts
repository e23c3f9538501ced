/**
 * The TypeScript samples of the pages, type-checked as a user's code: each ```ts block becomes a module of
 * its own in one temporary project whose tsconfig is as strict as this repository's and resolves
 * `stormguard` and its subpaths to this package's built declarations (`dist/`, as its `exports` do), and
 * one `tsc --noEmit` checks them all.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fencedBlocks } from './markdown.js';

const run = promisify(execFile);

/** One ```ts (or ```typescript) block of a page. */
export interface TypeScriptSample {
  /** The page, relative to the repository root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  source: string;
  /**
   * The file the block is an excerpt of (its marker says `sample: from <path>`): a part of a function
   * shown alone does not compile alone, so it is checked to be in that file, which is type-checked.
   */
  from?: string;
}

const FROM = /^sample:\s*from\s+(\S+)$/;

/** Every TypeScript block of a page. */
export function typeScriptSamplesIn(file: string, markdown: string): TypeScriptSample[] {
  return fencedBlocks(markdown)
    .filter((block) => block.lang === 'ts' || block.lang === 'typescript')
    .map((block) => {
      const from = FROM.exec(block.marker ?? '')?.[1];
      return { file, line: block.line, source: block.lines.join('\n'), ...(from ? { from } : {}) };
    });
}

/**
 * Whether `excerpt`'s lines stand in `source` one after another, as they are but for indentation (an
 * excerpt of a function body is shown without the function's indentation).
 *
 * @example
 * isExcerptOf('a();\nb();', 'function f() {\n  a();\n  b();\n}'); // true
 */
export function isExcerptOf(excerpt: string, source: string): boolean {
  const want = excerpt
    .trimEnd()
    .split('\n')
    .map((line) => line.trim());
  const lines = source.split('\n').map((line) => line.trim());
  for (let i = 0; i + want.length <= lines.length; i++)
    if (want.every((line, j) => lines[i + j] === line)) return true;
  return false;
}

/**
 * What the samples may use without declaring it: most are fragments of a reader's program, so the things
 * the reader has already (`redis`, `connection`, `processor`, `log`, the dependency clients) and the
 * stormguard exports a fragment names without importing are declared here, as globals, with their real
 * types. A sample that declares or imports a name itself uses its own.
 */
const CONTEXT = `import type * as Core from 'stormguard';
import type * as Config from 'stormguard/config';
import type * as Bull from 'stormguard/bullmq';
import type * as OnRedis from 'stormguard/redis';
import type * as OnPostgres from 'stormguard/postgres';
import type * as Console from 'stormguard/dashboard';
import type * as Tracing from 'stormguard/opentelemetry';
import type { Queue as BullQueue, Job as BullJob } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Pool } from 'pg';

declare global {
  // The reader's own things.
  const redis: Redis;
  const connection: { host: string; port: number; maxRetriesPerRequest: null };
  const pool: Pool;
  const processor: Bull.StormguardProcessor<any, any, string>;
  const log: { info(...args: unknown[]): void; warn(...args: unknown[]): void; error(...args: unknown[]): void };
  const budget: Core.RetryBudget;
  const breaker: Core.CircuitBreaker;
  const deadLetters: OnRedis.RedisDeadLetterStore;
  const store: OnRedis.RedisDeadLetterStore;
  const flowStore: OnRedis.RedisFlowStore;
  const audit: Core.AuditLog;
  const worker: Bull.StormguardWorker;
  const dlq: Bull.DeadLetterQueue;
  const queue: BullQueue;
  const job: BullJob;
  const fleet: Core.Fleet;
  const dashboard: Console.DashboardHandler;
  const token: string;
  const policy: Core.RetryPolicy;
  const error: unknown;
  const id: string;
  const signal: AbortSignal;
  // The reader's dependencies, whatever their clients are.
  const search: any;
  const db: any;
  const api: any;
  const mailer: any;
  const payments: any;
  const user: any;
  const order: any;
  const q: any;
  function writeFile(path: string, data: string): Promise<void>;
  function render(view: unknown): void;
  // stormguard's exports, for fragments that leave out their imports.
  const presets: typeof Core.presets;
  const definePolicy: typeof Core.definePolicy;
  const decide: typeof Core.decide;
  const retry: typeof Core.retry;
  const systemRandom: typeof Core.systemRandom;
  const planForWindow: typeof Core.planForWindow;
  const loadPolicies: typeof Config.loadPolicies;
  const defineDependencyMap: typeof Core.defineDependencyMap;
  const dependencyFor: typeof Core.dependencyFor;
  const dependenciesFor: typeof Core.dependenciesFor;
  const chargeAll: typeof Core.chargeAll;
  const readFleetStatus: typeof Core.readFleetStatus;
  const flowStatusOf: typeof Core.flowStatusOf;
  const saysUnhealthy: (status: unknown) => boolean;
  const RetryBudget: typeof Core.RetryBudget;
  type RetryBudget = Core.RetryBudget;
  const CircuitBreaker: typeof Core.CircuitBreaker;
  type CircuitBreaker = Core.CircuitBreaker;
  const BrokenCircuitError: typeof Core.BrokenCircuitError;
  const StatusSourceError: typeof Core.StatusSourceError;
  type StatusSourceError = Core.StatusSourceError;
  type Classifier = Core.Classifier;
  type DeadLetterReason = Core.DeadLetterReason;
  type DeadLetterQueueSummary = Core.DeadLetterQueueSummary;
  type PausedWorkerStatus = Core.PausedWorkerStatus;
  type ParkedJobsStatus = Core.ParkedJobsStatus;
  type BudgetStatus = Core.BudgetStatus;
  type AttentionReason = Core.AttentionReason;
  type ListedBreaker = Core.ListedBreaker;
  class QuotaExceeded extends Error {}
  const createWorker: typeof Bull.createWorker;
  const createDashboard: typeof Console.createDashboard;
  const openTelemetryTracing: typeof Tracing.openTelemetryTracing;
  const RedisDeadLetterStore: typeof OnRedis.RedisDeadLetterStore;
  const RedisReplayRunStore: typeof OnRedis.RedisReplayRunStore;
  const RedisFlowStore: typeof OnRedis.RedisFlowStore;
  const RedisBreakerStore: typeof OnRedis.RedisBreakerStore;
  const PostgresBudgetStore: typeof OnPostgres.PostgresBudgetStore;
  const Queue: typeof import('bullmq').Queue;
}
`;

/**
 * The subpaths `stormguard/<name>` a user imports, each the index of its source folder: read from the
 * package's `exports`, so a new subpath is checked without being listed here too.
 */
const SUBPATHS = Object.keys(
  (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { exports: object })
    .exports,
)
  .filter((key) => key.startsWith('./') && key !== './package.json')
  .map((key) => key.slice(2));

/**
 * Type-checks every sample in one `tsc` run and returns the compiler's messages per sample
 * (`docs/x.md:12` → its lines, with line numbers on the page), for the samples that fail.
 *
 * @example
 * await typeCheck(ROOT, samples); // { 'README.md:40': ['README.md:52: error TS2304: Cannot find name …'] }
 */
export async function typeCheck(
  root: string,
  samples: readonly TypeScriptSample[],
): Promise<Record<string, string[]>> {
  // Inside the repository's node_modules, so the samples' own imports (bullmq, ioredis, pg…) resolve to
  // the dev dependencies, as they would in a user's project.
  const dir = mkdtempSync(join(root, 'node_modules', '.docs-samples-'));
  try {
    const names = samples.map((_, i) => `sample-${i}.ts`);
    samples.forEach((sample, i) => {
      writeFileSync(join(dir, names[i] as string), `${sample.source}\n`);
    });
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    writeFileSync(join(dir, 'context.d.ts'), CONTEXT);
    // The built declarations, as the package's `types` conditions name them: checking the samples against
    // them is a few seconds, against the sources most of a minute.
    const paths: Record<string, string[]> = { stormguard: [join(root, 'dist/index.d.ts')] };
    for (const name of SUBPATHS) paths[`stormguard/${name}`] = [join(root, `dist/${name}/index.d.ts`)];
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: join(root, 'tsconfig.json'),
        compilerOptions: { noEmit: true, moduleDetection: 'force', paths },
        include: [],
        files: ['context.d.ts', ...names],
      }),
    );
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const output = await run(process.execPath, [tsc, '-p', dir, '--pretty', 'false'], {
      cwd: dir,
      maxBuffer: 16 << 20,
    }).then(
      () => '',
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}`,
    );
    return failuresBySample(output, samples, names);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** tsc's `sample-N.ts(line,col): error …` lines, told per sample, with the page's file and line. */
function failuresBySample(
  output: string,
  samples: readonly TypeScriptSample[],
  names: readonly string[],
): Record<string, string[]> {
  const failures: Record<string, string[]> = {};
  for (const message of output.split('\n').filter((l) => l.trim() !== '')) {
    const at = /(?:^|\/)(sample-\d+\.ts)\((\d+),(\d+)\): (.*)$/.exec(message);
    const index = at ? names.indexOf(at[1] as string) : -1;
    const sample = samples[index];
    const key = sample ? `${sample.file}:${sample.line}` : 'tsc';
    const text = sample && at ? `${sample.file}:${sample.line + Number(at[2])}: ${at[4]}` : message;
    failures[key] = [...(failures[key] ?? []), text];
  }
  return failures;
}
