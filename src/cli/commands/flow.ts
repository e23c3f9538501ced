import type { Command } from 'commander';
import { formatDuration } from '../../common/duration.js';
import { assertPrefix } from '../../common/names.js';
import type { FlowStore } from '../../runtime/flow-control/store.js';
import { readSchema, withPostgres } from '../connect-postgres.js';
import { withRedis } from '../connect-redis.js';
import { type CliIO, printJson } from '../io.js';
import { type BackendFlags, fleetBackend, withExamples, withFleetStateOptions } from '../options.js';

interface FlowFlags extends BackendFlags {
  prefix: string;
  json?: boolean;
}

interface StatusFlags extends FlowFlags {
  queue?: string;
}

/**
 * `stormguard flow status|off|on`: flow control's fleet-wide kill switch, and what it holds per dependency
 * (the workers holding a queue paused for it, as they record themselves in the flow store, and parked jobs).
 * `off` makes every worker stop pausing, parking and pacing within its state-cache time (250 ms by default)
 * and release what it parked; `on` turns it back on.
 *
 * @example
 * stormguard flow off --redis redis://10.0.0.5:6379 --prefix shop
 * stormguard flow status search --queue index --postgres postgres://app@db:5432/shop --json
 */
export function register(program: Command, io: CliIO): void {
  const flow = program.command('flow').description("flow control's fleet-wide kill switch and state");
  withExamples(withFleetStateOptions(flow.command('status')), [
    'stormguard flow status',
    'stormguard flow status search --queue index --json',
    'stormguard flow status search --queue index --postgres postgres://app@db:5432/shop --schema stormguard',
  ])
    .description(
      'show whether flow control is on fleet-wide and, per dependency, whether it is down, which workers hold a queue paused for it and how many jobs are parked',
    )
    .argument('[dependencies...]', 'dependencies to show')
    .option('--queue <queue>', 'the queue whose parked jobs to count')
    .action(async (dependencies: string[], flags: StatusFlags, command: Command) => {
      const report = await withFlowStore(flags, command, async (store) => {
        const off = await store.switchedOff();
        const rows = await Promise.all(
          dependencies.map(async (dependency) => {
            const [snapshot, paused] = await Promise.all([
              store.read(dependency),
              store.pausedWorkers(dependency),
            ]);
            return {
              dependency,
              down: snapshot.down,
              ...(snapshot.recoveredAtMs === undefined
                ? {}
                : {
                    recoveredAtMs: snapshot.recoveredAtMs,
                    recoveredForMs: snapshot.nowMs - snapshot.recoveredAtMs,
                  }),
              ...(flags.queue === undefined ? {} : { parked: await store.parked(dependency, flags.queue) }),
              pausedWorkers: paused.map(({ queue, worker, sinceMs, untilMs }) => ({
                queue,
                worker,
                sinceMs,
                untilMs,
              })),
            };
          }),
        );
        return {
          prefix: flags.prefix,
          on: !off,
          ...(flags.queue === undefined ? {} : { queue: flags.queue }),
          dependencies: rows,
        };
      });
      if (flags.json) {
        printJson(io, report);
        return;
      }
      const lines = [`flow control is ${report.on ? 'on' : 'OFF'} fleet-wide (prefix ${flags.prefix})`];
      for (const row of report.dependencies) {
        const state = row.down
          ? 'down'
          : row.recoveredForMs === undefined
            ? 'up'
            : `up, recovered ${formatDuration(row.recoveredForMs)} ago`;
        const parked = 'parked' in row ? `, ${row.parked} parked in ${report.queue}` : '';
        lines.push(`${row.dependency}: ${state}${parked}${pausedText(row.pausedWorkers)}`);
      }
      io.stdout.write(`${lines.join('\n')}\n`);
    });
  for (const [name, off] of [
    ['off', true],
    ['on', false],
  ] as const)
    withExamples(withFleetStateOptions(flow.command(name)), [
      `stormguard flow ${name}`,
      `stormguard flow ${name} --redis redis://10.0.0.5:6379 --prefix shop`,
      `stormguard flow ${name} --postgres postgres://app@db:5432/shop --prefix shop`,
    ])
      .description(
        off
          ? 'turn flow control off fleet-wide: workers stop pausing, parking and pacing within their state-cache time, and release what they parked'
          : 'turn flow control back on fleet-wide',
      )
      .action(async (flags: FlowFlags, command: Command) => {
        await withFlowStore(flags, command, (store) => Promise.resolve(store.setOff(off)));
        if (flags.json) printJson(io, { prefix: flags.prefix, on: !off });
        else
          io.stdout.write(
            off
              ? `flow control is OFF fleet-wide (prefix ${flags.prefix}): workers stop holding jobs within their state-cache time\n`
              : `flow control is on fleet-wide (prefix ${flags.prefix})\n`,
          );
      });
}

/** `, 2 workers paused (index: host-a:41:1, crawl: host-b:7:1)`, or nothing when none is. */
function pausedText(paused: readonly { queue: string; worker: string }[]): string {
  if (paused.length === 0) return '';
  const who = paused.map((p) => `${p.queue}: ${p.worker}`).join(', ');
  return `, ${paused.length} ${paused.length === 1 ? 'worker' : 'workers'} paused (${who})`;
}

/** Runs `work` with the fleet's flow store on the backend the flags name (Redis, or PostgreSQL). */
async function withFlowStore<T>(
  flags: FlowFlags,
  command: Command,
  work: (store: FlowStore) => Promise<T>,
): Promise<T> {
  assertPrefix(flags.prefix);
  const backend = fleetBackend(flags, command);
  if (backend.kind === 'redis') {
    const { RedisFlowStore } = await import('../../redis/flow-store.js');
    return withRedis(backend.url, (redis) => work(new RedisFlowStore({ redis, prefix: flags.prefix })));
  }
  const { PostgresFlowStore } = await import('../../postgres/flow-store.js');
  return withPostgres(backend.url, (pool) =>
    readSchema(backend, () =>
      work(
        new PostgresFlowStore({
          connection: pool,
          schema: backend.schema,
          prefix: flags.prefix,
          migrate: false,
        }),
      ),
    ),
  );
}
