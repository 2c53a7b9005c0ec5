/**
 * Importing a plugin module as a new generation (DESIGN "Hot reload").
 *
 * `importGeneration(path)` imports the module with a fresh `?harness-gen=N` query; the resolve hook in
 * `reload-hooks.mjs` passes the query on to the project-local modules it imports, so edited helpers
 * run their new code. Packages in node_modules and the runtime directory are never duplicated.
 */
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';
import { HarnessError } from './errors.ts';

let hooksRegistered = false;
let generationCounter = 0;

function ensureHooks(): void {
  if (hooksRegistered) return;
  hooksRegistered = true;
  const runtimeDirUrl = new URL('../', import.meta.url).href;
  register(new URL('./reload-hooks.mjs', import.meta.url).href, import.meta.url, { data: { runtimeDirUrl } });
}

/**
 * Imports `path` (absolute file path) as a new module generation.
 * @throws HarnessError `PLUGIN_IMPORT_FAILED` with the cause (syntax error, missing file, …).
 */
export async function importGeneration(path: string): Promise<Record<string, unknown>> {
  ensureHooks();
  const url = pathToFileURL(path);
  url.searchParams.set('harness-gen', String(++generationCounter));
  try {
    return (await import(url.href)) as Record<string, unknown>;
  } catch (error) {
    // A missing plugin file: Node's message would name this loader as the importer, not the config.
    const reason = existsSync(path) ? (error instanceof Error ? error.message : String(error)) : 'no such file; check the module path of this plugin in the config';
    throw new HarnessError('PLUGIN_IMPORT_FAILED', `Could not import plugin module ${path}: ${reason}`, { cause: error, details: { path } });
  }
}
