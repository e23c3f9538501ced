/**
 * The first line of an error's message, without a trailing colon: libraries such as `yaml` follow their
 * message with a multi-line excerpt ("…at line 2, column 1:\n\n  a: [1\n  ^"), which a one-line CLI error
 * cannot show.
 *
 * @example
 * firstLineOf(new Error('bad input at line 2, column 1:\n\na: [1')); // "bad input at line 2, column 1"
 */
export function firstLineOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split('\n')[0] ?? '').replace(/\s*:\s*$/, '');
}
