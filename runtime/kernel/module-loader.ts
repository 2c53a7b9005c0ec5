/**
 * Importing a plugin module as a new generation (DESIGN "Hot reload"), and finding it first.
 *
 * `importGeneration(path)` imports the module with a fresh `?harness-gen=N` query each time; the resolve hook in `reload-hooks.mjs` (registered only
 * then: hot reload pays for it, a cold start does not) passes the query on to the project-local
 * modules it imports, so edited helpers run their new code. Packages in node_modules and the runtime directory are never duplicated.
 * A TypeScript module (a project's config or plugin) needs a loader: when none is active (the built
 * package runs on plain node), tsx's is registered once, on the first TypeScript import.
 *
 * `resolveModule(specifier, baseDir)` finds the file a config names: a path (relative to `baseDir`,
 * or absolute), a `file:` URL, or a package specifier (`harness-runtime/plugins/llm-openai`,
 * `some-npm-plugin`) resolved by Node's ESM rules from `baseDir`, as an `import` there would.
 */
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve as resolveEsm } from 'import-meta-resolve';
import { HarnessError } from './errors.ts';
import { causeMessage, syntaxErrorOf } from './key-location.ts';

let hooksRegistered = false;
let generationCounter = 0;
/** Paths imported at least once (their next import is a new generation). */
const importedPaths = new Set<string>();

function ensureHooks(): void {
  if (hooksRegistered) return;
  hooksRegistered = true;
  const runtimeDirUrl = new URL('../', import.meta.url).href;
  register(new URL('./reload-hooks.mjs', import.meta.url).href, import.meta.url, { data: { runtimeDirUrl } });
}

/** @internal Whether the reload resolve hook has been registered in this process (tests, startup checks). */
export function reloadHooksRegistered(): boolean {
  return hooksRegistered;
}

/**
 * Imports `path` (absolute file path) as a new module generation.
 * @throws HarnessError `PLUGIN_IMPORT_FAILED` with the cause (syntax error, missing file, …).
 */
export async function importGeneration(path: string): Promise<Record<string, unknown>> {
  // The first import of a path is a plain one: the resolve hook (a loader thread Node starts, ~90 ms
  // of a cold start) is registered only when a path is imported again — a hot reload (`harness dev`,
  // `reloadPlugin`) or a second harness in the process — whose generation must not share modules.
  const first = !importedPaths.has(path);
  importedPaths.add(path);
  if (!first) ensureHooks();
  const load = () => {
    const url = pathToFileURL(path);
    // The query even on the first import: without it a `.ts` outside any package.json (module type
    // unknown) fails under tsx with "Cannot require() ES Module … in a cycle".
    url.searchParams.set('harness-gen', String(++generationCounter));
    return import(url.href) as Promise<Record<string, unknown>>;
  };
  try {
    try {
      return await load();
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ERR_UNKNOWN_FILE_EXTENSION' || !(await registerTypeScript())) throw error;
      return await load();
    }
  } catch (error) {
    // A missing plugin file: Node's message would name this loader as the importer, not the config.
    // A syntax error tsx could not compile: its location 1-based (esbuild's message has a 0-based column in bytes), in the details when it is in this file.
    const syntax = syntaxErrorOf(error);
    const reason = existsSync(path) ? causeMessage(error, syntax, path) : 'no such file; check the module path of this plugin in the config';
    const at = syntax?.file === path ? { line: syntax.line, column: syntax.column } : {};
    throw new HarnessError('PLUGIN_IMPORT_FAILED', `Could not import plugin module ${path}: ${reason}`, { cause: error, details: { path, ...at } });
  }
}

let typeScript: Promise<boolean> | undefined;

/** Registers tsx's ESM loader once (for a project's own TypeScript). Resolves false when it was already registered. */
function registerTypeScript(): Promise<boolean> {
  if (typeScript !== undefined) return typeScript.then(() => false);
  typeScript = import('tsx/esm/api').then(({ register: registerTsx }) => {
    registerTsx();
    return true;
  });
  return typeScript;
}

/**
 * The absolute file path of the module a config names (see the module docstring).
 * @throws HarnessError `PLUGIN_NOT_FOUND` for a package specifier that does not resolve from `baseDir`.
 */
export function resolveModule(specifier: string, baseDir: string): string {
  if (isAbsolute(specifier)) return specifier;
  if (specifier.startsWith('file:')) return fileURLToPath(specifier);
  if (specifier === '.' || specifier === '..' || specifier.startsWith('./') || specifier.startsWith('../')) return resolve(baseDir, specifier);
  try {
    return fileURLToPath(resolveEsm(specifier, pathToFileURL(join(baseDir, 'harness.config.js')).href));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new HarnessError(
      'PLUGIN_NOT_FOUND',
      `Plugin module "${specifier}" cannot be found from ${baseDir}: ${reason}. Install the package there (npm install <package>), or name the module by a path ("./plugins/x.ts").`,
      {
        cause: error,
        details: { specifier, baseDir },
      },
    );
  }
}
