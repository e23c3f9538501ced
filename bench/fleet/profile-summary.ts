/**
 * What each side's worker CPU per job went to, from the profiles `bench/fleet/index.ts --cpu-prof <folder>`
 * wrote (one per worker process and measured run, named `<side>-<path>-<queue>-<pid>-<jobs>jobs.cpuprofile`).
 * For each side and path it sums the busy samples of every profile and divides by the jobs those runs ended:
 * - by area: a sample's own frame, as stormguard's source folder and file (`src/runtime/job-runtime`), a
 *   package (`ioredis`, `bullmq`), Node's internals, or V8 itself (native code, garbage collection);
 * - by stormguard frame: the innermost stormguard frame on the sample's stack, what it called included
 *   (ioredis writing a command stormguard sent counts there), or none.
 * stormguard's own code runs on its side only, so its rows are what it adds; the other rows compare with
 * the bare side's.
 *
 *   npx tsx bench/fleet/profile-summary.ts <folder> [--top 14] [--json]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatTable } from '../common.js';

interface CpuProfile {
  nodes: { id: number; callFrame: { url: string; functionName: string }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

interface Totals {
  jobs: number;
  busyMicros: number;
  byArea: Map<string, number>;
  byStormguardFrame: Map<string, number>;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '14' }, json: { type: 'boolean', default: false } },
});
const folder = positionals[0];
const top = Number(values.top);
if (!folder || !Number.isInteger(top) || top < 1) {
  process.stderr.write('usage: profile-summary.ts <folder> [--top N] [--json]\n');
  process.exit(2);
}

const SOURCE = /\/src\/([^/]+(?:\/[^/.]+)?)/;

function area(url: string): string {
  if (!url) return 'V8 (native, GC)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1] as string;
  const source = SOURCE.exec(url);
  if (source) return `src/${source[1]}`;
  if (url.startsWith('node:')) return 'Node internals';
  return /\/bench\//.test(url) ? 'bench' : 'other';
}

const groups = new Map<string, Totals>();
for (const file of readdirSync(folder).sort()) {
  const name = /^(bare|stormguard)-(success|retry)-.*-(\d+)jobs\.cpuprofile$/.exec(file);
  if (!name) continue;
  const key = `${name[1]} ${name[2]}`;
  const totals = groups.get(key) ?? {
    jobs: 0,
    busyMicros: 0,
    byArea: new Map(),
    byStormguardFrame: new Map(),
  };
  groups.set(key, totals);
  totals.jobs += Number(name[3]);
  const profile = JSON.parse(readFileSync(join(folder, file), 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parents = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parents.set(child, n.id);
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id)?.callFrame;
    if (!frame || frame.functionName === '(idle)') return;
    const micros = profile.timeDeltas[i] ?? 0;
    totals.busyMicros += micros;
    add(totals.byArea, area(frame.url), micros);
    let owner = 'none (BullMQ, ioredis, Node, V8)';
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      const url = nodes.get(at)?.callFrame.url ?? '';
      if (!url.includes('node_modules') && SOURCE.test(url)) {
        owner = area(url);
        break;
      }
    }
    add(totals.byStormguardFrame, owner, micros);
  });
}

function add(map: Map<string, number>, key: string, micros: number): void {
  map.set(key, (map.get(key) ?? 0) + micros);
}

const perJob = (totals: Totals, map: Map<string, number>) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([what, micros]) => ({ what, microsPerJob: Number((micros / totals.jobs).toFixed(1)) }));

const summary = [...groups].sort().map(([key, totals]) => ({
  side: key,
  jobs: totals.jobs,
  busyMicrosPerJob: Number((totals.busyMicros / totals.jobs).toFixed(1)),
  byArea: perJob(totals, totals.byArea),
  byStormguardFrame: perJob(totals, totals.byStormguardFrame),
}));

if (values.json) {
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} else {
  if (summary.length === 0) process.stdout.write(`no bench/fleet profiles in ${folder}\n`);
  for (const s of summary) {
    process.stdout.write(`\n${s.side}: ${s.jobs} jobs, ${s.busyMicrosPerJob} µs of worker CPU per job\n`);
    const rows = (list: { what: string; microsPerJob: number }[]) =>
      list.map((r) => [r.what, r.microsPerJob.toFixed(1)]);
    process.stdout.write(`${formatTable([['by area', 'µs/job'], ...rows(s.byArea)])}\n`);
    if (s.side.startsWith('stormguard'))
      process.stdout.write(
        `${formatTable([['by innermost stormguard frame', 'µs/job'], ...rows(s.byStormguardFrame)])}\n`,
      );
  }
}
