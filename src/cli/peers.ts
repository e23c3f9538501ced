import type { Command } from 'commander';

/**
 * stormguard's optional peer dependencies, each with the flag that makes a command need it (the client
 * library of a backend), or none when the command needs it whatever its flags.
 */
const PEERS: Readonly<Record<string, string | undefined>> = {
  ioredis: '--redis',
  pg: '--postgres',
  bullmq: undefined,
  amqplib: '--amqp',
  'prom-client': undefined,
  '@opentelemetry/api': undefined,
};

/**
 * The optional peer package `error` says is missing (Node's ERR_MODULE_NOT_FOUND for an import of
 * `ioredis`, `pg`, `bullmq`…, from stormguard or from a peer that needs it), or `undefined` for any other
 * error, a missing file of stormguard's own included.
 *
 * @example
 * missingPeer(Object.assign(new Error("Cannot find package 'ioredis' imported from /app/x.js"), { code: 'ERR_MODULE_NOT_FOUND' })); // 'ioredis'
 */
export function missingPeer(error: unknown): string | undefined {
  if ((error as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') return undefined;
  const name = /Cannot find (?:package|module) '((?:@[^/']+\/)?[^/']+)/.exec(
    String((error as Error).message),
  )?.[1];
  return name !== undefined && Object.hasOwn(PEERS, name) ? name : undefined;
}

/**
 * What to tell a user whose command needs a peer that is not installed: the command, the flag that
 * needs it, and the install line.
 *
 * @example
 * missingPeerMessage(['budget', 'status'], 'ioredis'); // 'stormguard budget status --redis needs ioredis: npm install ioredis'
 */
export function missingPeerMessage(commandPath: readonly string[], peer: string): string {
  const flag = PEERS[peer];
  const words = ['stormguard', ...commandPath, ...(flag ? [flag] : [])].join(' ');
  return `${words} needs ${peer}: npm install ${peer}`;
}

/**
 * The words of a command as typed, `['dlq', 'replay']` for `stormguard dlq replay`.
 *
 * @example
 * commandPathOf(replayCommand); // ['dlq', 'replay']
 */
export function commandPathOf(command: Command | undefined): string[] {
  const words: string[] = [];
  for (let c = command; c?.parent; c = c.parent) words.unshift(c.name());
  return words;
}
