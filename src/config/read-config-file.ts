import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { firstLineOf } from '../common/error-text.js';
import { InvalidInputError } from '../errors/invalid-input-error.js';

const SUPPORTED = '.json, .yaml, .yml, .js, .mjs, .cjs or .ts';

/**
 * Options of {@link readConfigFile}.
 *
 * @example
 * await readConfigFile(path, { execute: false }); // a pull request's config: data formats only
 */
export interface ReadConfigOptions {
  /**
   * Whether a JavaScript or TypeScript config may be loaded, which **runs its code** with this process's
   * rights. `false` accepts data formats only (.json, .yaml, .yml): for configs from untrusted sources,
   * such as a pull request linted in CI. Default true.
   */
  execute?: boolean;
}

/**
 * Reads a config file into plain data: JSON, YAML, or a JavaScript module's default export (or the module
 * itself when it has none; an `export default` compiled to CommonJS, as in a project without
 * `"type": "module"`, is unwrapped too). A TypeScript file (`.ts`, `.mts`, `.cts`) is loaded through tsx
 * when tsx is installed; otherwise the error says to install it or to use .js, .json or .yaml. Loading a
 * .js, .mjs, .cjs or .ts config **executes it**; `{ execute: false }` refuses them. Every failure is an
 * `InvalidInputError` naming the file, and for a syntax error the line and column.
 *
 * @example
 * const data = await readConfigFile('stormguard.config.yaml');
 */
export async function readConfigFile(path: string, options: ReadConfigOptions = {}): Promise<unknown> {
  const absolute = resolve(path);
  const ext = extname(absolute).toLowerCase();
  const isModule = ['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts'].includes(ext);
  if (isModule && options.execute === false)
    throw new InvalidInputError(
      `${path}: a ${ext} config is code, and loading it would run it; with --no-exec only data formats are read (.json, .yaml, .yml)`,
    );
  if (ext === '.json' || ext === '.yaml' || ext === '.yml') {
    const text = await readText(path, absolute);
    try {
      return ext === '.json' ? JSON.parse(text) : parseYaml(text);
    } catch (error) {
      throw new InvalidInputError(
        `${path}: not valid ${ext === '.json' ? 'JSON' : 'YAML'}: ${firstLineOf(error)}`,
      );
    }
  }
  if (ext === '.js' || ext === '.mjs' || ext === '.cjs') {
    await readText(path, absolute); // a clear "does not exist" before import() says something vaguer
    return exported(await importModule(path, () => import(pathToFileURL(absolute).href), absolute));
  }
  if (ext === '.ts' || ext === '.mts' || ext === '.cts') {
    await readText(path, absolute);
    const tsImport = await loadTsx(path);
    return exported(await importModule(path, () => tsImport(pathToFileURL(absolute).href, import.meta.url)));
  }
  throw new InvalidInputError(`${path}: unsupported config file type "${ext || '(none)'}"; use ${SUPPORTED}`);
}

async function readText(path: string, absolute: string): Promise<string> {
  try {
    return await readFile(absolute, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ENOENT') throw new InvalidInputError(`${path}: config file does not exist`);
    throw new InvalidInputError(`${path}: cannot read the config file (${code ?? firstLineOf(error)})`);
  }
}

type TsImport = (specifier: string, parent: string) => Promise<unknown>;

async function loadTsx(path: string): Promise<TsImport> {
  try {
    // tsx is optional: a project that writes its config in TypeScript usually has it already.
    const api = (await import('tsx/esm/api')) as { tsImport: TsImport };
    return api.tsImport;
  } catch {
    throw new InvalidInputError(
      `${path}: loading a TypeScript config needs tsx (npm install --save-dev tsx); or write the config as .js, .mjs, .json or .yaml`,
    );
  }
}

async function importModule(
  path: string,
  load: () => Promise<unknown>,
  javascript?: string,
): Promise<unknown> {
  try {
    return await load();
  } catch (error) {
    let failure = loadFailure(error);
    // Node's import() reports a JavaScript syntax error without its place; `node --check` names it.
    if (javascript !== undefined && error instanceof SyntaxError) {
      const at = syntaxErrorPlace(javascript);
      if (at) failure = `${firstLineOf(error)} (at ${at})`;
    }
    throw new InvalidInputError(`${path}: the config module failed to load: ${failure}`);
  }
}

/** `file:line` of the first syntax error in a JavaScript file, from `node --check` (only on that path). */
function syntaxErrorPlace(absolute: string): string | undefined {
  const check = spawnSync(process.execPath, ['--check', absolute], { encoding: 'utf8', timeout: 10_000 });
  const first = (check.stderr ?? '').split('\n')[0] ?? '';
  return /:\d+$/.test(first) ? first.replace(/^file:\/\//, '') : undefined;
}

/**
 * What went wrong loading a module, in one line, with the place when there is one: esbuild (through tsx)
 * puts `file:line:column: ERROR: …` on the line after its summary; for a JavaScript file the
 * caller asks `node --check`.
 */
function loadFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const located = /^(.*?:\d+:\d+): (?:ERROR: )?(.*)$/m.exec(message);
  if (located && located[0] !== message.split('\n')[0]) return `${located[2]} (at ${located[1]})`;
  return firstLineOf(error);
}

function exported(mod: unknown): unknown {
  const m = mod as { default?: unknown };
  const value = m.default !== undefined ? m.default : mod;
  // `export default` compiled to CommonJS arrives as { default: { __esModule: true, default: config } }.
  const inner = value as { __esModule?: boolean; default?: unknown } | null;
  if (inner && typeof inner === 'object' && inner.__esModule === true && inner.default !== undefined)
    return inner.default;
  return value;
}
