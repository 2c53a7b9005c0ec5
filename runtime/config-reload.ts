/**
 * Applying an edited config to a running harness (DESIGN "Hot reload"; issue 17 "dev"): the config
 * module is imported again (a fresh module generation), checked, and its plugin list is compared
 * with the running stack, plugin by plugin:
 *
 * - an entry whose plugin is not running (added to the config, or one that failed to load) is
 *   loaded;
 * - an entry whose plugin runs with another raw config (or, for an entry given as a definition
 *   object, another definition) is reloaded with it — a new generation, swapped in atomically, so
 *   there is no moment without it;
 * - a running plugin no entry names any more is unloaded;
 * - everything else is left as it runs (a plugin's own files are the file watcher's business).
 *
 * Each change succeeds or fails on its own: a plugin whose new config or code fails keeps its old
 * generation serving. A config that does not load, or is not a valid config, changes nothing and
 * emits `config/reload-failed`. Plugins added later take their place after those already running
 * (a plugin moved within the list keeps its place). Changes of other keys (`defaults`, `dataDir`,
 * `store`, `retry`, `maxSteps`) are reported in `restartKeys`: they apply to a harness created
 * again. Every change is journaled by the harness (`plugin/reload`, see reload-journal.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import { HarnessError, toFailure } from './kernel/errors.ts';
import { resolveModule } from './kernel/module-loader.ts';
import { changedKeys, type PluginSpec } from './kernel/plugin.ts';
import { loadConfig, validateConfig, type Harness, type HarnessConfig } from './harness.ts';

/** One change `applyConfig` made to the running stack, or tried to. */
export interface PluginChange {
  readonly action: 'load' | 'reload' | 'unload';
  readonly outcome: 'ok' | 'failed';
  /** The plugin's name; for a load that failed before its module was read, the entry's module path. */
  readonly name: string;
  /** The plugin's module file (an entry named by `module`). */
  readonly module?: string;
  /** The generation serving afterwards (absent when none does: an unload, a failed load). */
  readonly generation?: number;
  /** Top-level keys of the plugin's config that changed (a reload). */
  readonly configKeys?: readonly string[];
  /** Why it failed (a `HarnessError`: `PLUGIN_IMPORT_FAILED`, `INVALID_CONFIG`, `PLUGIN_SETUP_FAILED`, …). */
  readonly error?: unknown;
}

/** What `reloadConfig` / `applyConfig` did. */
export interface ConfigReloadResult {
  /** `failed`: the config did not load or is invalid (see `error`), and nothing changed. */
  readonly outcome: 'applied' | 'unchanged' | 'failed';
  /** The plugin changes, in the order they were made: unloads, then reloads and loads in config order. */
  readonly changes: readonly PluginChange[];
  /** Other top-level keys that changed; they apply when the harness is created again. */
  readonly restartKeys: readonly string[];
  /** The config read (absent when it did not load). */
  readonly config?: HarnessConfig;
  /** Why the config did not load (`INVALID_CONFIG`, `CONFIG_NOT_FOUND`). */
  readonly error?: unknown;
}

/** The config each harness runs (after its last {@link applyConfig}); `harness.config` at first. */
const applied = new WeakMap<Harness, HarnessConfig>();

/**
 * Imports the harness's config file again and applies it (see the module comment).
 * @throws HarnessError `NO_CONFIG_FILE` when the harness was made from a config object.
 */
export async function reloadConfig(harness: Harness): Promise<ConfigReloadResult> {
  const configPath = harness.configPath;
  if (configPath === undefined) throw new HarnessError('NO_CONFIG_FILE', 'This harness was made from a config object, not a config file: there is no file to read again.');
  let next: HarnessConfig;
  try {
    next = await loadConfig(configPath);
    validateConfig(next, configPath);
  } catch (error) {
    harness.kernel.bus.emit('config/reload-failed', { configPath, failure: toFailure(error), error });
    return { outcome: 'failed', changes: [], restartKeys: [], error };
  }
  return applyConfig(harness, next);
}

/**
 * Brings the running plugin stack to `next`'s plugin list (see the module comment); `next` becomes
 * the config the harness runs. Applying the config the harness runs again loads only what is not
 * running (plugins that failed to load).
 */
export async function applyConfig(harness: Harness, next: HarnessConfig): Promise<ConfigReloadResult> {
  const previous = applied.get(harness) ?? harness.config;
  const host = harness.host;
  const baseDir = harness.ctx.paths.baseDir;
  const configPath = harness.configPath ?? baseDir;
  const running = host.list();
  const byModule = new Map(running.filter((info) => info.module !== undefined).map((info) => [info.module!, info.name]));
  const byName = new Set(running.map((info) => info.name));
  // Each entry, with the running plugin it names (by module path, or by the name of its definition).
  const claimed = new Set<string>();
  const plan: { spec: PluginSpec; module?: string; name?: string }[] = [];
  for (const spec of next.plugins) {
    let module: string | undefined;
    if (spec.module !== undefined) {
      try {
        module = resolveModule(spec.module, baseDir);
      } catch {
        module = undefined; // loading it reports why (PLUGIN_NOT_FOUND)
      }
    }
    let name = module !== undefined ? byModule.get(module) : spec.plugin !== undefined && byName.has(spec.plugin.name) ? spec.plugin.name : undefined;
    if (name !== undefined && claimed.has(name)) name = undefined; // a second entry of one plugin: loading it reports DUPLICATE_PLUGIN
    if (name !== undefined) claimed.add(name);
    plan.push({ spec, ...(module !== undefined ? { module } : {}), ...(name !== undefined ? { name } : {}) });
  }
  const changes: PluginChange[] = [];
  // Removed first (last loaded first), so a plugin moved to another module path can load again under its name.
  for (const info of [...running].reverse()) {
    if (claimed.has(info.name)) continue;
    try {
      await host.unload(info.name);
      changes.push({ action: 'unload', outcome: 'ok', name: info.name, ...(info.module ? { module: info.module } : {}) });
    } catch (error) {
      changes.push({ action: 'unload', outcome: 'failed', name: info.name, ...(info.module ? { module: info.module } : {}), error });
    }
  }
  for (const { spec, module, name } of plan) {
    if (name !== undefined) {
      const sameDefinition = spec.plugin === undefined || spec.plugin === host.definitionOf(name);
      const configKeys = changedKeys(host.configOf(name), spec.config);
      if (sameDefinition && configKeys.length === 0) continue;
      try {
        const info = await host.reload(name, { config: spec.config, ...(spec.plugin !== undefined && !sameDefinition ? { plugin: spec.plugin } : {}) });
        changes.push({ action: 'reload', outcome: 'ok', name, ...(module ? { module } : {}), generation: info.generation, ...(configKeys.length ? { configKeys } : {}) });
      } catch (error) {
        // The old generation keeps serving; the host emitted plugin/reload-failed (journaled).
        changes.push({ action: 'reload', outcome: 'failed', name, ...(module ? { module } : {}), generation: generationOf(harness, name), ...(configKeys.length ? { configKeys } : {}), error });
      }
      continue;
    }
    try {
      const info = await host.load(spec);
      changes.push({ action: 'load', outcome: 'ok', name: info.name, ...(info.module ? { module: info.module } : {}), generation: info.generation });
    } catch (error) {
      const label = spec.plugin?.name ?? module ?? spec.module ?? '(plugin)';
      harness.kernel.bus.emit('config/reload-failed', { configPath, plugin: label, ...(module ? { module } : {}), failure: toFailure(error), error });
      changes.push({ action: 'load', outcome: 'failed', name: label, ...(module ? { module } : {}), error });
    }
  }
  applied.set(harness, next);
  const restartKeys = (['dataDir', 'store', 'defaults', 'retry', 'maxSteps'] as const).filter((key) => !isDeepStrictEqual(previous[key], next[key]));
  return { outcome: changes.length === 0 ? 'unchanged' : 'applied', changes, restartKeys, config: next };
}

/** The config a harness runs: the one its last {@link applyConfig} applied, else `harness.config`. */
export function appliedConfig(harness: Harness): HarnessConfig {
  return applied.get(harness) ?? harness.config;
}

function generationOf(harness: Harness, name: string): number | undefined {
  return harness.host.list().find((info) => info.name === name)?.generation;
}

/** An entry of the config a harness runs whose plugin is not running (it failed to load). */
export interface PluginNotRunning {
  readonly spec: PluginSpec;
  /** The entry's module file, when it is named by a module that resolves. */
  readonly module?: string;
  /** How to name it: the plugin's name when given as a definition, else its module path. */
  readonly label: string;
}

/** The entries of the config the harness runs ({@link appliedConfig}) whose plugin is not running. */
export function pluginsNotRunning(harness: Harness): PluginNotRunning[] {
  const running = harness.host.list();
  const modules = new Set(running.flatMap((info) => (info.module !== undefined ? [info.module] : [])));
  const names = new Set(running.map((info) => info.name));
  const out: PluginNotRunning[] = [];
  for (const spec of appliedConfig(harness).plugins) {
    if (spec.plugin !== undefined) {
      if (!names.has(spec.plugin.name)) out.push({ spec, label: spec.plugin.name });
      continue;
    }
    let module: string | undefined;
    try {
      module = resolveModule(spec.module!, harness.ctx.paths.baseDir);
    } catch {
      module = undefined;
    }
    if (module === undefined || !modules.has(module)) out.push({ spec, ...(module !== undefined ? { module } : {}), label: module ?? spec.module! });
  }
  return out;
}
