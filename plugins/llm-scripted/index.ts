/**
 * plugins/llm-scripted — the embedded default model (provider `scripted`).
 *
 * A scripted model for demos, tests and plugin development: offline, deterministic, no key. It
 * streams like a real provider (fragments, usage, optional pace). `scripted-default` runs a small
 * real task in the session's workspace (list the files, read one, answer). More scripts are loaded
 * from files named in the config — `.json` rule lists or `.ts` modules whose default export is a
 * script function — each served as a model id.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { definePlugin, HarnessError, z } from '../../runtime/index.ts';
import { ScriptedAdapter } from './adapter.ts';
import { defaultScript } from './default-script.ts';
import { compileJsonScript, jsonScriptSchema, type ScriptFunction } from './script.ts';

export { ScriptedAdapter } from './adapter.ts';
export { compileJsonScript, jsonScriptSchema } from './script.ts';
export type { ScriptContext, ScriptFunction, ScriptReply, ScriptToolCall, JsonScript } from './script.ts';

export default definePlugin({
  name: 'llm-scripted',
  config: z
    .strictObject({
      /** Provider id the routes are registered under. */
      provider: z.string().min(1).default('scripted'),
      /** Delay between chunks in ms; 0 streams as fast as possible. */
      paceMs: z.number().min(0).max(10_000).default(0),
      /** Characters per streamed fragment. */
      fragmentChars: z.number().int().positive().default(12),
      /** Context window the models report, in tokens. */
      contextWindow: z.number().int().positive().default(128_000),
      /** Model id → script file (.json rules, or .ts/.js with a default-exported function); relative to the config file. */
      scripts: z.record(z.string().min(1), z.string().min(1)).default({}),
    })
    .default({ provider: 'scripted', paceMs: 0, fragmentChars: 12, contextWindow: 128_000, scripts: {} }),
  async setup(ctx, config) {
    const scripts = new Map<string, ScriptFunction>([['scripted-default', defaultScript]]);
    const missing: { message: string; path: string[] }[] = [];
    for (const [model, file] of Object.entries(config.scripts)) {
      const path = isAbsolute(file) ? file : resolve(ctx.paths.baseDir, file);
      if (!existsSync(path)) {
        const from = isAbsolute(file) ? '' : ` (${JSON.stringify(file)} is relative to the config's folder, ${ctx.paths.baseDir})`;
        missing.push({ message: `no script file at ${path}${from}; check the path, or remove the model`, path: ['scripts', model] });
        continue;
      }
      scripts.set(model, await loadScript(path));
    }
    // Reported like a schema issue: the host names the plugin and where each path is written.
    if (missing.length > 0)
      throw new HarnessError('INVALID_CONFIG', missing.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('\n'), {
        issues: missing.map((issue) => ({ code: 'SCRIPT_NOT_FOUND', ...issue })),
      });
    ctx.llm.registerAdapter([config.provider], new ScriptedAdapter({ scripts, paceMs: config.paceMs, fragmentChars: config.fragmentChars, contextWindow: config.contextWindow }));
  },
});

async function loadScript(path: string): Promise<ScriptFunction> {
  try {
    if (path.endsWith('.json')) {
      const parsed = jsonScriptSchema.safeParse(JSON.parse(await readFile(path, 'utf8')));
      if (!parsed.success) throw new Error(parsed.error.issues.map((issue) => `${issue.path.join('.') || '(script)'}: ${issue.message}`).join('; '));
      return compileJsonScript(parsed.data);
    }
    const module = (await import(pathToFileURL(path).href)) as { default?: unknown };
    if (typeof module.default !== 'function') throw new Error('its default export is not a function (context) => reply');
    return module.default as ScriptFunction;
  } catch (error) {
    throw new HarnessError('INVALID_SCRIPT', `Script ${path} could not be loaded: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}
