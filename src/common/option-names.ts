import { InvalidInputError } from '../errors/invalid-input-error.js';

/**
 * Every option name an options object accepts, as an object so that the compiler keeps it complete:
 * `satisfies OptionNames<Options>` fails when the interface gains an option the list lacks.
 *
 * @example
 * const NAMES = { redis: true, prefix: true } as const satisfies OptionNames<{ redis: unknown; prefix?: string }>;
 */
export type OptionNames<Options> = { readonly [K in keyof Required<Options>]: true };

/**
 * Refuses an options object holding a name it does not know: a typo or an option given in the wrong place
 * would otherwise be ignored without a word. The error names the option and where it belongs: the place
 * `elsewhere` gives for it (`prefix` → `workerOptions.prefix`), else the known name it is closest to.
 *
 * @example
 * checkOptionNames('createWorker', { prefix: '{bull}' }, WORKER_OPTION_NAMES, {
 *   prefix: 'a BullMQ worker option: give it in workerOptions ({ workerOptions: { prefix } })',
 * }); // throws InvalidInputError: createWorker: unknown option "prefix": a BullMQ worker option: …
 */
export function checkOptionNames(
  subject: string,
  options: unknown,
  known: Readonly<Record<string, true>>,
  elsewhere: Readonly<Record<string, string>> = {},
): void {
  if (typeof options !== 'object' || options === null) return;
  const names = Object.keys(known);
  for (const name of Object.keys(options)) {
    if (Object.hasOwn(known, name)) continue;
    const place = Object.hasOwn(elsewhere, name) ? elsewhere[name] : undefined;
    const closest = place === undefined ? closestName(name, names) : undefined;
    const hint =
      place ??
      (closest === undefined
        ? `${subject} takes ${names.join(', ')}`
        : `did you mean "${closest}"? (${subject} takes ${names.join(', ')})`);
    throw new InvalidInputError(`${subject}: unknown option "${name}": ${hint}`);
  }
}

/** The known name within a couple of edits of `name` (a typo), or a case-insensitive match. */
function closestName(name: string, names: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of names) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (!best || distance < best.distance) best = { name: candidate, distance };
  }
  const allowed = Math.max(1, Math.min(3, Math.floor(name.length / 4)));
  return best && best.distance <= allowed ? best.name : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
    }
    previous = current;
  }
  return previous[b.length] as number;
}
