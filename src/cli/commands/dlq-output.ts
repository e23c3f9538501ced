import { formatDuration } from '../../common/duration.js';
import type { ReplayReport } from '../../bullmq/replay.js';
import type { DeadLetterRecord } from '../../bullmq/types.js';

/** Pads columns to their widest cell; the last column is left ragged. */
export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** How long ago `atMs` was, for people: `4m ago`. */
export function ago(atMs: number, nowMs: number): string {
  return `${formatDuration(Math.max(0, nowMs - atMs))} ago`;
}

/** One page of a listing: the records shown, how many match, how many the queue holds. */
export interface ListPage {
  records: DeadLetterRecord[];
  matched: number;
  total: number;
  offset: number;
}

/** The `dlq list` table, under a line that says what is shown of what. */
export function formatList(dlqName: string, page: ListPage, nowMs: number): string {
  const { records, matched, total, offset } = page;
  if (records.length === 0)
    return `${dlqName}: nothing to show (${matched} matching, ${total} in the queue)\n`;
  const range = `${offset + 1}-${offset + records.length}`;
  const rows = [['ID', 'NAME', 'REASON', 'DEPENDENCY', 'ATTEMPTS', 'REPLAYS', 'DEAD-LETTERED', 'DETAIL']];
  for (const r of records)
    rows.push([
      r.jobId,
      r.name,
      r.reason,
      r.dependency,
      String(r.attemptsMade),
      String(r.replays),
      ago(r.deadLetteredAt, nowMs),
      r.detail,
    ]);
  return `${dlqName}: ${range} of ${matched} matching (${total} in the queue), oldest first\n${table(rows)}\n`;
}

/** The `dlq show` view of one record. */
export function formatRecord(r: DeadLetterRecord, nowMs: number): string {
  const at = (ms: number | undefined) =>
    ms === undefined ? '-' : `${new Date(ms).toISOString()} (${ago(ms, nowMs)})`;
  const lines = [
    ['job', r.jobId],
    ['queue', r.queue],
    ['name', r.name],
    ['reason', `${r.reason}: ${r.detail}`],
    ['dependency', r.dependency],
    ['attempts', String(r.attemptsMade)],
    ['replays', String(r.replays)],
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
  return `${table(lines.map(([k, v]) => [`${k}:`, v ?? '']))}\n${stack}`;
}

/** The closing lines of `dlq replay`. */
export function formatReport(report: ReplayReport): string {
  const { moved, skipped, failed } = report;
  const verb = report.dryRun ? 'would replay' : 'replayed';
  const lines = [
    `${verb} ${moved.length} of ${report.matched} matching jobs from ${report.deadLetterQueue} to ${report.queue}` +
      (report.dryRun ? '' : ` (${skipped.length} already gone, ${failed.length} failed)`),
  ];
  if (report.dryRun)
    for (const m of moved)
      lines.push(`  ${m.jobId} -> ${m.replayJobId}  ${m.name}  ${m.reason}  ${m.dependency}`);
  for (const f of failed) lines.push(`  failed ${f.jobId}: ${f.error}`);
  if (report.stoppedBecause)
    lines.push(
      `stopped early: ${report.stoppedBecause}. Run the same command again to replay the rest: ` +
        'jobs already replayed are not replayed twice.',
    );
  return `${lines.join('\n')}\n`;
}
