/**
 * Who sent which Redis command: a MONITOR connection that groups each command a client sent with the
 * commands its Lua script ran (Redis 7 shows a script's own commands right after the EVALSHA that ran
 * them, marked `lua`), and names the group's component: a script by the name its client registered it
 * under (ioredis `defineCommand`: BullMQ's and stormguard's), any other command by the keys it touches.
 */
import type { Cluster, Redis } from 'ioredis';

/** One command a client sent, with those its script ran. */
interface Group {
  command: string;
  args: string[];
  inner: string[];
}

/** Commands by component, then by command name (inside scripts included). */
export type Breakdown = Record<string, Record<string, number>>;

/** What ioredis keeps of a script it registered (`defineCommand`): its source and SHA1. */
interface RegisteredScript {
  lua: string;
  sha: string;
}

/** The scripts one client registered, by the name it registered each under (plain data: it crosses IPC). */
export type ScriptRegistry = Record<string, RegisteredScript>;

/** The scripts `client` has registered so far, for naming script calls another process's clients made. */
export function scriptRegistry(client: Redis | Cluster): ScriptRegistry {
  const set = (client as unknown as { scriptsSet: ScriptRegistry }).scriptsSet;
  return Object.fromEntries(Object.entries(set).map(([name, { lua, sha }]) => [name, { lua, sha }]));
}

export class CommandMonitor {
  readonly #groups: Group[] = [];
  #monitor: Redis | undefined;
  #on = false;

  /** Starts a MONITOR connection on `client`'s server (a duplicate of it). */
  async start(client: Redis): Promise<void> {
    this.#monitor = await client.monitor();
    this.#monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (!this.#on) return;
      if (source === 'lua') {
        this.#groups.at(-1)?.inner.push((args[0] ?? '').toLowerCase());
        return;
      }
      this.#groups.push({ command: (args[0] ?? '').toLowerCase(), args: args.slice(1), inner: [] });
    });
  }

  /**
   * Records from now until {@link stop}. MONITOR lines arrive after the commands ran: call `settle()` after
   * the last command to record, before stopping.
   */
  record(): void {
    this.#groups.length = 0;
    this.#on = true;
  }

  /** Waits until a marker command sent now has come back through MONITOR: every earlier line is in. */
  async settle(client: Redis): Promise<void> {
    const marker = `monitor-marker-${Math.random()}`;
    const seen = new Promise<void>((resolve) => {
      const listener = (_t: string, args: string[]) => {
        if (args[1] === marker) {
          this.#monitor?.off('monitor', listener);
          resolve();
        }
      };
      this.#monitor?.on('monitor', listener);
    });
    await client.echo(marker);
    await seen;
  }

  /**
   * Stops recording and names each group's component, from the scripts the given clients registered, and
   * those of `registries` (clients in other processes, see {@link scriptRegistry}).
   */
  stop(clients: Redis[], registries: ScriptRegistry[] = []): Breakdown {
    this.#on = false;
    const scripts = new Map<string, string>();
    const sources: [string, string][] = [];
    for (const set of [...clients.map(scriptRegistry), ...registries]) {
      for (const [name, script] of Object.entries(set)) {
        scripts.set(script.sha, name);
        sources.push([squeeze(script.lua).slice(0, 300), name]);
      }
    }
    const breakdown: Breakdown = {};
    for (const group of this.#groups) {
      if (group.command === 'echo' && String(group.args[0]).startsWith('monitor-marker-')) continue;
      const component = componentOf(group, scripts, sources);
      const counts = breakdown[component] ?? {};
      breakdown[component] = counts;
      counts[group.command] = (counts[group.command] ?? 0) + 1;
      for (const inner of group.inner) counts[inner] = (counts[inner] ?? 0) + 1;
    }
    return breakdown;
  }

  async close(): Promise<void> {
    this.#monitor?.disconnect();
  }
}

/** The component a command belongs to. */
function componentOf(group: Group, scripts: Map<string, string>, sources: [string, string][]): string {
  if (group.command === 'evalsha' || group.command === 'eval') {
    const head = group.args[0] ?? '';
    const name =
      group.command === 'evalsha'
        ? scripts.get(head)
        : sources.find(([source]) => squeeze(head).startsWith(source.slice(0, 200)))?.[1];
    return scriptComponent(name ?? 'unknown script', group.args);
  }
  const key = group.args[0] ?? '';
  if (/^bull:|^\{app\}:/.test(key) || ['bzpopmin', 'client', 'info', 'ping'].includes(group.command))
    return `BullMQ: ${group.command}`;
  if (/:att:/.test(key)) {
    const step = { get: 'read', mget: 'read', set: 'write', del: 'clear' }[group.command];
    return `stormguard: attempt state ${step ?? group.command}`;
  }
  if (/dependencies/.test(key)) return 'stormguard: registry';
  return `other: ${group.command}`;
}

/** The component of a registered script: stormguard's by what it does, BullMQ's by its own name. */
function scriptComponent(name: string, args: string[]): string {
  if (!name.startsWith('stormguard')) return `BullMQ: ${name.replace(/-\d+$/, '')}`;
  if (name.startsWith('stormguardBudgetSpend')) {
    // args: sha, numkeys, KEYS[1], ARGV[1..]. ARGV[6] is the number of retries asked for: 0 for a success batch alone (see budget-spend-1.lua).
    const count = args[2 + 6];
    return count === '0' ? 'stormguard: budget success flush' : 'stormguard: budget script (retry grant)';
  }
  if (name.startsWith('stormguardAttemptsRead')) return 'stormguard: attempt state read';
  if (name.startsWith('stormguardAttemptsWrite')) return 'stormguard: attempt state write';
  if (name.startsWith('stormguardAttemptsRetry')) return 'stormguard: attempt state write';
  if (/Registry/.test(name)) return 'stormguard: registry note';
  if (/Flow/.test(name)) return 'stormguard: flow checks';
  if (/Breaker/.test(name)) return 'stormguard: breaker';
  if (/Dlq/.test(name)) return 'stormguard: dead letters';
  return `stormguard: ${name}`;
}

/** Text without whitespace or MONITOR's escapes, for comparing a script's source with what MONITOR shows. */
function squeeze(text: string): string {
  return text.replace(/\\[nrt"\\]|\\x[0-9a-f]{2}|[\s"\\]/g, '');
}
