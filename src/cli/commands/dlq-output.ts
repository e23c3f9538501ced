import { formatDuration } from '../../common/duration.js';
import type {
  DeadLetterPage,
  DeadLetterQueueSummary,
  MalformedDeadLetter,
  StoredDeadLetter,
} from '../../runtime/contracts.js';
import { isMalformedDeadLetter } from '../../runtime/dead-letter-record.js';
import type { ReplayReport } from '../../runtime/replay/replay.js';
import type { ReplayRun } from '../../runtime/replay-runs.js';

/** Pads columns to their widest cell; the last column is left ragged. Any cell may be missing. */
export function table(rows: readonly (readonly unknown[])[]): string {
  const text = rows.map((row) => row.map(cellText));
  const widths = text[0]?.map((_, i) => Math.max(...text.map((r) => (r[i] ?? '').length))) ?? [];
  return text
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** One table cell on one line, whatever the value: a table never breaks on what a record holds. */
function cellText(value: unknown): string {
  const text = typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
  return text.replace(/\s+/g, ' ');
}

/** How long ago `atMs` was, for people: `4m ago`. */
export function ago(atMs: number, nowMs: number): string {
  return `${formatDuration(Math.max(0, nowMs - atMs))} ago`;
}

/** The `dlq list` (no queue) table: every queue the store knows. */
export function formatQueues(queues: readonly DeadLetterQueueSummary[]): string {
  if (queues.length === 0) return 'no queue has dead letters yet (workers register their queue on start)\n';
  const rows: unknown[][] = [['QUEUE', 'RECORDS', 'EVICTED', 'RETENTION']];
  for (const q of queues) rows.push([q.queue, q.count, q.evicted, retentionText(q.retention)]);
  return `${table(rows)}\n`;
}

function retentionText(retention: DeadLetterQueueSummary['retention']): string {
  const parts = [];
  if (retention.maxAgeMs !== undefined) parts.push(`max age ${formatDuration(retention.maxAgeMs)}`);
  if (retention.maxCount !== undefined) parts.push(`max ${retention.maxCount} records`);
  return parts.length > 0 ? parts.join(', ') : 'kept until replayed or purged';
}

/** One page of a listing, with how many match and how many the queue holds. */
export interface ListPage extends DeadLetterPage {
  matched: number;
  total: number;
  newestFirst: boolean;
}

/** The `dlq list <queue>` table, under a line that says what is shown of what; malformed records too. */
export function formatList(queue: string, page: ListPage, nowMs: number): string {
  const { records, malformed, matched, total } = page;
  const shown = records.length + malformed.length;
  if (shown === 0) return `${queue}: nothing to show (${matched} matching, ${total} in the queue)\n`;
  const order = page.newestFirst ? 'newest first' : 'oldest first';
  const rows: unknown[][] = [
    ['ID', 'JOB', 'NAME', 'REASON', 'DEPENDENCY', 'ATTEMPTS', 'REPLAYS', 'DEAD-LETTERED', 'DETAIL'],
  ];
  for (const r of records)
    rows.push([
      r.id,
      r.jobId,
      r.name,
      r.reason,
      r.dependency,
      r.attemptsMade,
      r.replays,
      ago(r.deadLetteredAt, nowMs),
      r.replay ? `${r.detail} (replay claimed as ${r.replay.jobId})` : r.detail,
    ]);
  for (const m of malformed) rows.push([m.id, '?', '?', 'malformed', '?', '?', '?', '?', m.problem]);
  const more = page.next ? `\nmore: --after ${page.next}` : '';
  return `${queue}: ${shown} of ${matched} matching (${total} in the queue), ${order}\n${table(rows)}${more}\n`;
}

/** The `dlq show` view of one record (or of what is wrong with it). */
export function formatRecord(entry: StoredDeadLetter | MalformedDeadLetter, nowMs: number): string {
  if (isMalformedDeadLetter(entry))
    return `${table([
      ['record:', entry.id],
      ['malformed:', entry.problem],
    ])}\nreplay skips it; \`stormguard dlq purge\` removes it\n`;
  const r = entry;
  const at = (ms: number | undefined) =>
    ms === undefined ? '-' : `${new Date(ms).toISOString()} (${ago(ms, nowMs)})`;
  const lines = [
    ['record', r.id],
    ['job', r.jobId],
    ['queue', r.queue],
    ['name', r.name],
    ['reason', `${r.reason}: ${r.detail}`],
    ['dependency', r.dependency],
    ['attempts', r.attemptsMade],
    ['replays', r.replays],
    ['replayed from', r.replayedFrom ?? '-'],
    ['replay claim', r.replay ? `${r.replay.jobId} at ${at(r.replay.claimedAt)}` : '-'],
    ['idempotency key', r.idempotencyKey ?? '-'],
    ['created', at(r.createdAt)],
    ['first failed', at(r.firstFailedAt)],
    ['dead-lettered', at(r.deadLetteredAt)],
    [
      'last error',
      `${r.lastError.name}: ${r.lastError.message} [${r.lastError.classification.reason}, ${r.lastError.classification.retryable ? 'retryable' : 'not retryable'}]`,
    ],
    ['data', JSON.stringify(r.data)],
    ['options', JSON.stringify(r.opts)],
  ];
  const stack = r.lastError.stack ? `\n${r.lastError.stack}\n` : '';
  return `${table(lines.map(([k, v]) => [`${k}:`, v]))}\n${stack}${formatHistory(r)}`;
}

/** The attempts a record keeps, one line each, under a line saying how many of them these are. */
function formatHistory(r: StoredDeadLetter): string {
  const history = r.history ?? [];
  if (history.length === 0)
    return `\nattempts: none kept (the record was filed before records kept each attempt)\n`;
  const heading =
    r.attemptsMade > history.length
      ? `the last ${history.length} of ${r.attemptsMade} attempts, oldest first`
      : 'every attempt, oldest first';
  const rows: unknown[][] = [['ATTEMPT', 'AT', 'DEPENDENCY', 'CLASSIFIED', 'DECISION', 'DELAY', 'ERROR']];
  for (const a of history)
    rows.push([
      a.attempt,
      new Date(a.at).toISOString(),
      a.dependency,
      `${a.classification.reason} (${a.classification.retryable ? 'retryable' : 'not retryable'})`,
      `${a.decision} (${a.cause})`,
      a.delayMs === undefined ? '-' : formatDuration(a.delayMs),
      `${a.error.name}: ${a.error.message}`,
    ]);
  return `\n${heading}:\n${table(rows)}\n`;
}

/** The closing lines of `dlq replay`. */
export function formatReport(report: ReplayReport): string {
  const { moved, skipped, failed, malformed } = report;
  const verb = report.dryRun ? 'would replay' : 'replayed';
  const lines = [
    `${verb} ${moved.length} of ${report.matched} matching jobs of queue "${report.queue}"` +
      (report.dryRun ? '' : ` (${skipped.length} already gone, ${failed.length} failed)`),
  ];
  if (report.dryRun)
    for (const m of moved)
      lines.push(`  ${m.id} (job ${m.jobId}) -> ${m.replayJobId}  ${m.name}  ${m.reason}  ${m.dependency}`);
  for (const f of failed) lines.push(`  failed ${f.id} (job ${f.jobId}): ${f.error}`);
  for (const m of malformed) lines.push(`  skipped malformed record ${m.id}: ${m.problem}`);
  if (!report.dryRun && failed.length + malformed.length > 0)
    lines.push(
      `${failed.length + malformed.length} records stayed in the dead-letter store (exit 1): run again to retry the failed ones; \`stormguard dlq show\` a malformed one, then purge it`,
    );
  if (report.stoppedBecause)
    lines.push(
      `stopped early: ${report.stoppedBecause}. Run the same command again to replay the rest: ` +
        'jobs already replayed are not replayed twice.',
    );
  return `${lines.join('\n')}\n`;
}

/** `dlq runs`: one line per stored replay run, newest first. */
export function formatRuns(runs: readonly ReplayRun[]): string {
  if (runs.length === 0) return 'no replay runs are stored\n';
  const rows = runs.map((r) => [
    r.id,
    r.queue,
    r.startedAtMs === undefined ? 'preview' : r.status,
    `${r.moved}/${r.total} moved`,
    `${r.failed} failed`,
    r.startedBy ?? r.createdBy,
    r.waitingFor ? `waiting for ${r.waitingFor}` : (r.stoppedBecause ?? ''),
  ]);
  return `${table([['ID', 'QUEUE', 'STATUS', 'PROGRESS', 'FAILED', 'BY', 'NOTE'], ...rows])}\n`;
}

/** `dlq replay --run`: where the run was left, and each record that failed with the reason. */
export function formatRun(run: ReplayRun, heldByOther: boolean): string {
  const lines = [
    `replay run ${run.id} of queue "${run.queue}": ${run.status}, ${run.moved} of ${run.total} moved (${run.skipped} already gone, ${run.failed} failed)`,
  ];
  if (heldByOther)
    lines.push(
      `another process (${run.owner}) is running it; it goes on here once that one stops or its hold lapses`,
    );
  else if (run.status === 'pending')
    lines.push(`stopped (${run.stoppedBecause ?? 'interrupted'}): run the same command again to go on`);
  for (const f of run.failures)
    lines.push(`  failed ${f.id}${f.jobId ? ` (job ${f.jobId})` : ''}: ${f.error}`);
  return `${lines.join('\n')}\n`;
}
