/**
 * A Redis Cluster master killed (SIGKILL) under three running worker processes: what stormguard lost, how long the
 * budget ran degraded, and BullMQ's own loss window. Each scenario runs on a fresh three-master cluster
 * with a replica per master, on loopback:
 *
 * - `durable`: stormguard's defaults on a Cluster (dead letters and idempotency outcomes wait for a replica);
 * - `no-wait`: the same with `durableWrites: false`, the baseline;
 * - `bullmq-too`: BullMQ's keys on the killed master as well, to see BullMQ's own loss window.
 *
 * Loopback replication takes microseconds, so a lost write needs it to be in flight at the kill: a run
 * without WAIT usually loses nothing here; WAIT makes it impossible rather than unlikely.
 *
 * Usage: npx tsx bench/failover/index.ts [--jobs 800] [--rounds 1] [--json]
 */
import { type FailoverFigures, runFailover } from '../../tests/cluster/failover-run.js';
import { TestRedisCluster } from '../../tests/helpers/redis-cluster.js';
import { benchArgs, formatTable } from '../common.js';

const { size: jobs, rounds, json } = benchArgs({ size: ['jobs', 800, 4], rounds: 1 });
const scenarios = [
  ['durable', {}],
  ['no-wait', { durableWrites: false }],
  ['bullmq-too', { bullmqOnVictim: true }],
] as const;

const results: { scenario: string; round: number; figures: FailoverFigures }[] = [];
for (const [scenario, options] of scenarios) {
  for (let round = 1; round <= rounds; round++) {
    process.stderr.write(`${scenario} round ${round}: starting a cluster\n`);
    const cluster = await TestRedisCluster.start({ replicas: 1 });
    try {
      results.push({ scenario, round, figures: await runFailover(cluster, { jobs, ...options }) });
    } finally {
      await cluster.close();
    }
  }
}

if (json) {
  process.stdout.write(`${JSON.stringify({ jobs, workers: 3, results }, null, 2)}\n`);
} else {
  const s = (ms: number) => (ms / 1_000).toFixed(1);
  process.stdout.write(
    `${formatTable([
      [
        'scenario',
        'promoted s',
        'replica back s',
        'degraded s',
        'granted degraded',
        'jobs affected',
        'store refusals',
        'dead letters lost',
        'outcomes lost',
        'outcomes unacknowledged (missing)',
        'BullMQ adds lost',
        'BullMQ completions lost',
      ],
      ...results.map(({ scenario, figures: f }) => [
        scenario,
        s(f.promotionMs),
        s(f.replicaBackMs),
        s(f.degradedMs),
        String(f.grantedWhileDegraded),
        String(f.jobsAffected),
        String(f.bookkeepingRetries),
        `${f.deadLettersLost} of ${f.deadLettersExpected}`,
        `${f.outcomesLost} of ${f.onceJobs - f.outcomesNotAcknowledged}`,
        `${f.outcomesNotAcknowledged} (${f.outcomesNotAcknowledgedMissing})`,
        `${f.bullmq.addsLost} of ${f.added}`,
        String(f.bullmq.completionsLost),
      ]),
    ])}\n`,
  );
}
