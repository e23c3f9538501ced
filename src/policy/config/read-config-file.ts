import { readFile } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { firstLineOf } from '../../common/error-text.js';
import { InvalidInputError } from '../../errors/invalid-input-error.js';

const SUPPORTED = '.json, .yaml, .yml, .js, .mjs, .cjs or .ts';

/**
 * Reads a config file into plain data: JSON, YAML, or a JavaScript module's default export (or the module
 * itself when it has none). A TypeScript file (`.ts`, `.mts`, `.cts`) is loaded through tsx when tsx is
 * installed; otherwise the error says to install it or to use .js, .json or .yaml. Every failure is an
 * `InvalidInputError` naming the file.
 *
 * @example
 * const data = await readConfigFile('stormguard.config.yaml');
 */
export async function readConfigFile(path: string): Promise<unknown> {
  const absolute = resolve(path);
  const ext = extname(absolute).toLowerCase();
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
    return exported(await importModule(path, () => import(pathToFileURL(absolute).href)));
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

async function importModule(path: string, load: () => Promise<unknown>): Promise<unknown> {
  try {
    return await load();
  } catch (error) {
    throw new InvalidInputError(`${path}: the config module failed to load: ${firstLineOf(error)}`);
  }
}

function exported(mod: unknown): unknown {
  const m = mod as { default?: unknown };
  return m.default !== undefined ? m.default : mod;
}
