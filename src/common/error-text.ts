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

/**
 * An error's class name, message and stack, whatever was thrown (a string, a plain object, `undefined`).
 *
 * @example
 * describeError(new TypeError('x')); // { name: 'TypeError', message: 'x', stack: '…' }
 * describeError('boom'); // { name: 'string', message: 'boom' }
 */
export function describeError(error: unknown): { name: string; message: string; stack?: string } {
  if (error instanceof Error) {
    const described: { name: string; message: string; stack?: string } = {
      name: error.name || error.constructor?.name || 'Error',
      message: error.message,
    };
    if (typeof error.stack === 'string') described.stack = error.stack;
    return described;
  }
  if (typeof error === 'object' && error !== null) {
    const { name, message } = error as { name?: unknown; message?: unknown };
    return {
      name: typeof name === 'string' ? name : (error.constructor?.name ?? 'Object'),
      message: typeof message === 'string' ? message : safeJson(error),
    };
  }
  return { name: typeof error, message: String(error) };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
