import type { Command } from 'commander';
import { formatDuration } from '../../common/duration.js';
import { assertPrefix } from '../../common/names.js';
import type { Fleet } from '../../status/fleet.js';
import { readFleetStatus } from '../../status/read-fleet-status.js';
import { withFleet } from '../fleet.js';
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
      const report = await withFlowFleet(flags, command, async (fleet) => {
        // The fleet-status read model, as the console and the metrics read it: the kill switch, each
        // named dependency's mark and paused workers, and its jobs parked in the named queue.
        const status = await readFleetStatus(
          { flow: fleet.status.flow },
          { dependencies, queues: flags.queue === undefined ? [] : [flags.queue], throwOnError: true },
        );
        const rows = dependencies.map((dependency) => {
          const row = status.dependencies.find((d) => d.dependency === dependency);
          const mark = row?.flow;
          return {
            dependency,
            down: mark?.down ?? false,
            ...(mark?.recoveredAtMs === undefined
              ? {}
              : { recoveredAtMs: mark.recoveredAtMs, recoveredForMs: mark.recoveredForMs }),
            ...(flags.queue === undefined ? {} : { parked: row?.parkedJobs ?? 0 }),
            pausedWorkers: (status.pausedWorkers ?? [])
              .filter((p) => p.dependency === dependency)
              .map(({ queue, worker, sinceMs, untilMs }) => ({ queue, worker, sinceMs, untilMs })),
          };
        });
        return {
          prefix: flags.prefix,
          on: status.flowControl?.on ?? true,
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
        await withFlowFleet(flags, command, async (fleet) => fleet.flow.setOff(off));
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
function pausedText(paused: readonly { queue: string; worker?: string }[]): string {
  if (paused.length === 0) return '';
  const who = paused.map((p) => `${p.queue}: ${p.worker ?? 'unnamed'}`).join(', ');
  return `, ${paused.length} ${paused.length === 1 ? 'worker' : 'workers'} paused (${who})`;
}

/** Runs `work` with the fleet on the backend the flags name (Redis, or PostgreSQL). */
function withFlowFleet<T>(
  flags: FlowFlags,
  command: Command,
  work: (fleet: Fleet) => Promise<T>,
): Promise<T> {
  assertPrefix(flags.prefix);
  return withFleet(fleetBackend(flags, command), flags.prefix, work);
}
