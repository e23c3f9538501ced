/**
 * The RabbitMQ game day at scale: the scenario of tests/amqp/gameday.test.ts (three consumer processes,
 * `search` down for 8 s, the budget's Redis killed for 3 s, one consumer SIGKILLed mid-message, then the
 * dead letters replayed and consumed) with 3 000 messages by default. Prints what happened: losses,
 * duplicates, dead letters by reason, the retries that reached the down dependency against the budget's
 * bound (design §3), and the times. Needs the local broker (127.0.0.1:5672) and rabbitmqctl (root): it
 * works in a vhost of its own, deleted at the end.
 *
 *   npx tsx bench/amqp/gameday.ts [--messages 3000] [--concurrency 20] [--json]
 */
import { parseArgs } from 'node:util';
import { runGameDay } from '../../tests/amqp/gameday/scenario.js';
import { formatTable } from '../common.js';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '3000' },
    concurrency: { type: 'string', default: '20' },
    json: { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
  },
});
const messages = Number(values.messages);
const concurrency = Number(values.concurrency);
if (!Number.isInteger(messages) || messages < 30 || !Number.isInteger(concurrency) || concurrency < 1) {
  process.stderr.write('--messages must be a whole number >= 30 and --concurrency one >= 1\n');
  process.exit(2);
}

const report = await runGameDay({ messages, concurrency, waitMs: 120_000, verbose: values.verbose === true });
if (values.json) {
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} else {
  const deadLetters = Object.entries(report.deadLettersByReason)
    .map(([reason, n]) => `${reason} ${n}`)
    .join(', ');
  const rows = [
    ['figure', 'value'],
    ['messages', String(report.messages)],
    ['consumer processes', String(report.processes)],
    ['lost', String(report.lost.length)],
    ['side effects duplicated', String(report.duplicated.length)],
    ['search successes duplicated', String(report.searchedTwice.length)],
    ['dead letters before replay', deadLetters || 'none'],
    ['replayed', String(report.replayed)],
    ['dead letters left', String(report.deadLettersLeft)],
    ['retries reaching search while down', String(report.retriesWhileDown)],
    ['  budget bound (design §3)', String(report.retryBound)],
    ['calls reaching search while down', String(report.callsWhileDown)],
    ['search successes before the outage', String(report.successesBeforeDown)],
    ['consumers degraded (Redis down)', String(report.degradedProcesses)],
    ['killed mid-message: side effects', `${report.killedMidMessage.key}: ${report.killedMidMessage.ledger}`],
    ['left in queue / buckets', `${report.leftInQueue} / ${report.leftInBuckets}`],
    ['setup, ms', String(report.setupMs)],
    ['wall (publish → replay done), ms', String(report.wallMs)],
    ['settled after recovery, ms', String(report.settledAfterRecoveryMs)],
    ['replay drained, ms', String(report.replayDrainMs)],
  ];
  process.stdout.write(`${formatTable(rows)}\n`);
}
const clean =
  report.lost.length === 0 &&
  report.duplicated.length === 0 &&
  report.deadLettersLeft === 0 &&
  report.retriesWhileDown <= report.retryBound;
process.exit(clean ? 0 : 1);
