/** Reading fields off errors of unknown shape, without trusting them. */

/** `value[key]` when `value` is an object, else undefined. */
export function field(value: unknown, key: string): unknown {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return undefined;
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined; // a throwing getter must not break classification
  }
}

/** The first of `keys` on `value` that holds a string. */
export function stringField(value: unknown, ...keys: string[]): string | undefined {
  for (const key of keys) {
    const found = field(value, key);
    if (typeof found === 'string') return found;
  }
  return undefined;
}

/** The first of `keys` on `value` that holds a finite number. */
export function numberField(value: unknown, ...keys: string[]): number | undefined {
  for (const key of keys) {
    const found = field(value, key);
    if (typeof found === 'number' && Number.isFinite(found)) return found;
  }
  return undefined;
}
