import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';

// One directive per line, the whole line: `--#include "includes/dead-letters.lua"`. A Lua comment, so an
// unresolved file is still valid Lua, and a line no other comment style can be mistaken for.
const DIRECTIVE = /^--#include\b(.*)$/;
const ARGUMENT = /^\s+"([\w./-]+\.lua)"\s*$/;

/**
 * A Lua source with its `--#include` directives that cannot be resolved: a missing file, a cycle, or a
 * directive that is not of the form `--#include "path/to/file.lua"`. The message names the file, the line
 * and the chain of includes that led there.
 *
 * @example
 * try {
 *   resolveLua('/app/src/redis/lua', 'budget-spend-1.lua');
 * } catch (error) {
 *   if (error instanceof LuaIncludeError) console.error(error.message);
 * }
 */
export class LuaIncludeError extends Error {
  override readonly name = 'LuaIncludeError';
}

/**
 * The source of the Lua script `file` (a path relative to `root`, the folder of the scripts) with every
 * `--#include "path"` line replaced by the resolved source of `root/path`: paths are relative to `root`
 * whichever file names them, includes may include others, and a file already included into this script
 * is included once only (so two includes may share a third). A missing file, an include cycle or a
 * malformed directive throws a {@link LuaIncludeError}. The build writes the result into `dist/`, and the
 * Redis stores resolve the same way when they run from `src/`, so both register the same source (and the
 * same SHA1). A resolved source contains no directive: resolving it again returns it unchanged.
 *
 * @example
 * resolveLua(fileURLToPath(new URL('./lua/', import.meta.url)), 'dlq-count-5.lua');
 */
export function resolveLua(root: string, file: string): string {
  return expand(root, file, [], new Set());
}

// `chain`: the files that included `file`, outermost first; `included`: every file already in the script.
function expand(root: string, file: string, chain: string[], included: Set<string>): string {
  included.add(file);
  const lines = read(root, file, chain).split('\n');
  const within = [...chain, file];
  return lines
    .map((line, index) => {
      const directive = DIRECTIVE.exec(line.replace(/\r$/, ''));
      if (!directive) return line;
      const at = `${file}:${index + 1}`;
      const argument = ARGUMENT.exec(directive[1]!);
      if (!argument)
        throw new LuaIncludeError(
          `${at}: malformed include ${JSON.stringify(line)}; write --#include "includes/name.lua" (a path relative to ${root})`,
        );
      const target = posix.normalize(argument[1]!);
      if (target.startsWith('../') || target.startsWith('/'))
        throw new LuaIncludeError(`${at}: include "${target}" leaves ${root}; name a file inside it`);
      if (within.includes(target))
        throw new LuaIncludeError(
          `${at}: include cycle ${[...within, target].map((f) => `"${f}"`).join(' → ')}; ` +
            'move what they share into a file that includes neither',
        );
      // Once per script: a second include of the same file would define its locals again.
      if (included.has(target)) return `-- ${target}: included above`;
      try {
        // The included text replaces the directive's line; its own last newline is that line's end.
        return expand(root, target, within, included).replace(/\n$/, '');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        throw new LuaIncludeError(
          `${at}: include "${target}" not found (no ${join(root, target)})${through(chain)}; ` +
            `include paths are relative to ${root}`,
        );
      }
    })
    .join('\n');
}

function read(root: string, file: string, chain: string[]): string {
  try {
    return readFileSync(join(root, file), 'utf8');
  } catch (error) {
    // A missing include is reported by the line that names it; a missing script here.
    if (chain.length > 0 || (error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    throw new LuaIncludeError(`Lua script "${file}" not found in ${root}`);
  }
}

function through(chain: string[]): string {
  return chain.length > 0 ? ` (included through ${chain.map((f) => `"${f}"`).join(' → ')})` : '';
}
