import type { Command } from 'commander';
import { InvalidInputError } from '../errors/invalid-input-error.js';

/**
 * Refuses an empty value given on the command line, for every option and argument of every command:
 * `simulate --scenario ""` must not quietly run the built-in scenario, nor `dlq show index ""` look up a
 * job with no id. Commander accepts `""` as a value; no stormguard option or argument has a meaning for it.
 * Run as a `preAction` hook, so it sees the command that is about to run.
 *
 * @example
 * program.hook('preAction', (_program, command) => refuseEmptyValues(command));
 */
export function refuseEmptyValues(command: Command): void {
  for (const option of command.options) {
    const name = option.attributeName();
    const value = command.getOptionValue(name) as unknown;
    if (command.getOptionValueSource(name) !== 'cli' || !isEmpty(value)) continue;
    const flag = option.long ?? option.short ?? name;
    throw new InvalidInputError(`${flag}: the value is empty (expected: ${option.description || 'a value'})`);
  }
  command.registeredArguments.forEach((argument, i) => {
    if (isEmpty(command.processedArgs[i]))
      throw new InvalidInputError(
        `<${argument.name()}>: the argument is empty (expected: ${argument.description || `the ${argument.name()}`})`,
      );
  });
}

function isEmpty(value: unknown): boolean {
  if (typeof value === 'string') return value.trim() === '';
  return Array.isArray(value) && value.some((v) => typeof v === 'string' && v.trim() === '');
}
