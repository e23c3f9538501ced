import { Command, CommanderError } from 'commander';
import { isInvalidInputError } from '../errors/invalid-input-error.js';
import { registerCommands } from './commands/index.js';
import { refuseEmptyValues } from './empty-values.js';
import type { CliIO } from './io.js';
import { maskCredentials } from './mask-credentials.js';
import { commandPathOf, missingPeer, missingPeerMessage } from './peers.js';

/**
 * Runs the CLI with `argv` (without node and script) and returns the exit code: 0 ok, 1 failure,
 * 2 bad usage or input. Never calls `process.exit`, so it can run inside tests.
 */
export async function run(argv: string[], io: CliIO): Promise<number> {
  // The command being run, to name it when it needs an optional peer that is not installed.
  let running: Command | undefined;
  const program = new Command('stormguard')
    .description("Keeps a fleet of job workers from turning one dependency's outage into a retry storm.")
    .version(await version())
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(maskCredentials(s)),
    })
    .exitOverride()
    .hook('preAction', (_program, command) => {
      running = command;
      refuseEmptyValues(command);
    });
  registerCommands(program, io);
  for (const sub of program.commands)
    sub.exitOverride().configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(maskCredentials(s)),
    });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return io.exitCode ?? 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return 0;
      if (error.code === 'commander.help') return 0;
      return 2;
    }
    const peer = missingPeer(error);
    if (peer !== undefined) {
      io.stderr.write(`${missingPeerMessage(commandPathOf(running), peer)}\n`);
      return 1;
    }
    // Credentials never reach the terminal, whichever library wrote the message.
    if (isInvalidInputError(error)) {
      io.stderr.write(`stormguard: ${maskCredentials(error.message)}\n`);
      return 2;
    }
    io.stderr.write(
      `stormguard: ${maskCredentials(error instanceof Error ? error.message : String(error))}\n`,
    );
    if (process.env.STORMGUARD_DEBUG && error instanceof Error)
      io.stderr.write(`${maskCredentials(error.stack ?? '')}\n`);
    return 1;
  }
}

async function version(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}
