import type { Command } from 'commander';
import type { CliIO } from '../io.js';

/**
 * Every CLI command, one file each. A command file exports `register(program, io)` and calls the same
 * library functions a user would.
 */
export function registerCommands(_program: Command, _io: CliIO): void {}
