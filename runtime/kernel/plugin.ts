/**
 * Plugins and the plugin host (DESIGN "The kernel": Plugins, Hot reload).
 *
 * `definePlugin({ name, config?, setup })` declares a plugin. The host validates its config with zod,
 * runs `setup` against a staged context, and commits everything setup registered in one synchronous
 * step. `reload(name)` imports a new module generation, sets it up staged, swaps old registrations for
 * new in one synchronous step and then disposes the old generation; if anything before the swap
 * fails, the old generation keeps serving and `plugin/reload-failed` is emitted.
 */
import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import type { z } from 'zod';
import type { EmitHook } from './bus.ts';
import type { Kernel, PluginContext } from './context.ts';
import { checkConfig, invalidConfig } from './config-check.ts';
import { HarnessError, toFailure, type Failure } from './errors.ts';
import { Fiber, Scope } from './fiber.ts';
import { importGeneration, resolveModule } from './module-loader.ts';

const PLUGIN = Symbol.for('harness.plugin');

/**
 * What `definePlugin` returns: a name (unique per harness), an optional zod `config` schema and
 * `setup(ctx, config)` (DESIGN "The kernel", Plugins). A config entry names it by `module` or `plugin`.
 */
export interface PluginDefinition<Config = unknown> {
  readonly name: string;
  readonly config?: z.ZodType<Config>;
  readonly setup: (ctx: PluginContext, config: Config) => void | Promise<void>;
}

type ConfigOf<Schema> = Schema extends z.ZodType ? z.output<Schema> : undefined;

/**
 * Declares a plugin. `config` is a zod schema; `setup` receives the parsed config. Everything
 * registered through `ctx` during setup becomes visible together when setup resolves, and is undone
 * when the plugin is unloaded or reloaded.
 *
 * The config contract: the host checks the config with the schema before setup, and unknown keys
 * are errors in every object of it — a plain `z.object` is checked as strict, like `z.strictObject`,
 * so a misspelt key (`maxDepht`) is `INVALID_CONFIG` "did you mean `maxDepth`?", never silently
 * dropped. An object that takes keys it does not list says so: `z.looseObject`, `.catchall()`, or
 * `z.record` for a map.
 */
export function definePlugin<Schema extends z.ZodType | undefined = undefined>(definition: {
  name: string;
  config?: Schema;
  setup: (ctx: PluginContext, config: ConfigOf<Schema>) => void | Promise<void>;
}): PluginDefinition<ConfigOf<Schema>> {
  if (typeof definition?.name !== 'string' || !/^[a-z0-9@][a-z0-9._/@-]*$/i.test(definition.name)) {
    throw new HarnessError('INVALID_PLUGIN', `A plugin needs a name of letters, digits, ".", "_", "-", "/" or "@"; got ${JSON.stringify(definition?.name)}.`);
  }
  if (typeof definition.setup !== 'function') {
    throw new HarnessError('INVALID_PLUGIN', `Plugin "${definition.name}" has no setup(ctx, config) function.`);
  }
  const plugin = { ...definition } as PluginDefinition<ConfigOf<Schema>>;
  Object.defineProperty(plugin, PLUGIN, { value: true });
  return Object.freeze(plugin);
}

export function isPluginDefinition(value: unknown): value is PluginDefinition {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[PLUGIN] === true;
}

/** How a config names a plugin: a module path (hot-reloadable) or a definition object. */
export interface PluginSpec {
  /** A module whose default export is a plugin: a path (relative ones resolve from the config file's folder) or a package specifier resolved from there. */
  module?: string;
  plugin?: PluginDefinition<any>;
  /** Raw config, validated by the plugin's schema. */
  config?: unknown;
}

/** A loaded plugin: its name, its generation (1, then +1 per reload) and the module it came from. */
export interface PluginInfo {
  readonly name: string;
  readonly generation: number;
  readonly module?: string;
}

/** `plugin/reloaded` payload: a new generation is serving (swap and total times in ms). */
export interface PluginReloadedEvent extends PluginInfo {
  /** Duration of the synchronous swap, in ms. */
  readonly swapMs: number;
  /** Import + setup + swap, in ms. */
  readonly reloadMs: number;
  /** Top-level keys of the plugin's config that differ from the previous generation's (a reload given a new config). */
  readonly configKeys?: readonly string[];
}

/** `plugin/reload-failed` payload: the import or setup failed and the old generation keeps serving. */
export interface PluginReloadFailedEvent {
  readonly name: string;
  readonly module?: string;
  /** The generation still serving. */
  readonly generation: number;
  readonly failure: Failure;
  readonly error: unknown;
  /** Top-level keys of the config the failed reload was given that differ from the serving one's. */
  readonly configKeys?: readonly string[];
}

declare module './bus.ts' {
  interface HookMap {
    'plugin/loaded': EmitHook<PluginInfo>;
    'plugin/reloaded': EmitHook<PluginReloadedEvent>;
    'plugin/reload-failed': EmitHook<PluginReloadFailedEvent>;
    'plugin/unloaded': EmitHook<PluginInfo>;
  }
}

interface Loaded {
  readonly definition: PluginDefinition<any>;
  readonly modulePath?: string;
  readonly rawConfig: unknown;
  readonly generation: number;
  /** The plugin's place in listener registration order, kept across reloads. */
  readonly order: number;
  readonly fiber: Fiber;
  readonly scope: Scope;
}

export class PluginHost {
  private readonly kernel: Kernel;
  private readonly baseDir: string;
  private readonly configPath: string | undefined;
  private readonly loaded = new Map<string, Loaded>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly retiring = new Set<Promise<void>>();
  /** load/reload/unload operations not settled yet (host.dispose waits for them). */
  private readonly inflight = new Set<Promise<unknown>>();
  private disposed = false;

  /**
   * @param options.baseDir Where relative module paths resolve from (default: the process's cwd).
   * @param options.configPath The config file the plugin configs come from, so an invalid one names its `file:line:col`.
   */
  constructor(kernel: Kernel, options: { baseDir?: string; configPath?: string } = {}) {
    this.kernel = kernel;
    this.baseDir = options.baseDir ?? process.cwd();
    this.configPath = options.configPath;
    for (const name of ['plugin/loaded', 'plugin/reloaded', 'plugin/reload-failed', 'plugin/unloaded']) kernel.bus.declare(name, 'emit');
  }

  /**
   * Loads a plugin: import (for a module spec), validate config, run setup staged, commit.
   * @throws HarnessError `PLUGIN_IMPORT_FAILED`, `INVALID_PLUGIN`, `DUPLICATE_PLUGIN`, `INVALID_CONFIG`,
   *   `PLUGIN_SETUP_FAILED` (with the cause). Nothing of a failed load stays visible.
   */
  async load(spec: PluginSpec | PluginDefinition<any>): Promise<PluginInfo> {
    return this.track(() => this.loadNow(spec));
  }

  private async loadNow(spec: PluginSpec | PluginDefinition<any>): Promise<PluginInfo> {
    const normalized: PluginSpec = isPluginDefinition(spec) ? { plugin: spec } : spec;
    if (typeof normalized !== 'object' || normalized === null || (normalized.module === undefined && normalized.plugin === undefined)) {
      throw new HarnessError('INVALID_PLUGIN', 'A plugin spec needs a "module" path or a "plugin" definition (from definePlugin).');
    }
    if (normalized.plugin !== undefined && !isPluginDefinition(normalized.plugin)) {
      throw new HarnessError('INVALID_PLUGIN', 'The "plugin" of a plugin spec must be made with definePlugin({ name, setup }).');
    }
    const modulePath = normalized.module === undefined ? undefined : this.resolvePath(normalized.module);
    const definition = normalized.plugin ?? (await this.importDefinition(modulePath!));
    return this.serialize(definition.name, async () => {
      if (this.loaded.has(definition.name)) {
        throw new HarnessError(
          'DUPLICATE_PLUGIN',
          `Plugin "${definition.name}" is already loaded: a plugin is loaded once, so list it once in the config's plugins (a loaded plugin is reloaded, not loaded again).`,
        );
      }
      const next = await this.setUp(definition, modulePath, normalized.config, 1, this.kernel.bus.reserveOrder());
      try {
        next.scope.commit();
      } catch (error) {
        await next.fiber.dispose();
        throw setupFailed(definition.name, error, this.configPath);
      }
      this.loaded.set(definition.name, next);
      const info = this.info(next);
      this.kernel.bus.emit('plugin/loaded', info);
      return info;
    });
  }

  /**
   * Replaces a loaded plugin with a new generation (new module generation for a module spec, and
   * optionally a new config; `plugin`: a new definition for a plugin given as one, e.g. from a
   * re-read config). On failure the old generation keeps serving, `plugin/reload-failed` is
   * emitted, and the promise rejects with the cause.
   */
  async reload(name: string, options: { config?: unknown; plugin?: PluginDefinition<any> } = {}): Promise<PluginInfo> {
    return this.track(() =>
      this.serialize(name, async () => {
        const current = this.require(name);
        const started = performance.now();
        const configKeys = 'config' in options ? changedKeys(current.rawConfig, options.config) : undefined;
        const changed = configKeys !== undefined && configKeys.length > 0 ? { configKeys } : {};
        let next: Loaded;
        try {
          const definition = options.plugin ?? (current.modulePath === undefined ? current.definition : await this.importDefinition(current.modulePath));
          if (definition.name !== name) {
            throw new HarnessError('PLUGIN_RENAMED', `The module of plugin "${name}" now exports plugin "${definition.name}"; a rename needs unload and load.`);
          }
          const rawConfig = 'config' in options ? options.config : current.rawConfig;
          next = await this.setUp(definition, current.modulePath, rawConfig, current.generation + 1, current.order);
        } catch (error) {
          this.reloadFailed(current, error, changed);
          throw error;
        }
        // The swap: one synchronous section, so no dispatch sees no generation or a mix of two.
        const swapStart = performance.now();
        current.scope.detach();
        try {
          next.scope.commit();
        } catch (error) {
          current.scope.reattach();
          await next.fiber.dispose();
          const failure = setupFailed(name, error, this.configPath);
          this.reloadFailed(current, failure, changed);
          throw failure;
        }
        this.loaded.set(name, next);
        const swapMs = performance.now() - swapStart;
        this.retire(current.fiber);
        const info = this.info(next);
        this.kernel.bus.emit('plugin/reloaded', { ...info, swapMs, reloadMs: performance.now() - started, ...changed });
        return info;
      }),
    );
  }

  /** Unloads a plugin: its registrations disappear at once; its fiber's disposers then run. */
  async unload(name: string): Promise<void> {
    await this.trackAlways(() =>
      this.serialize(name, async () => {
        const current = this.require(name);
        this.loaded.delete(name);
        current.scope.detach();
        await current.fiber.dispose();
        this.kernel.bus.emit('plugin/unloaded', this.info(current));
      }),
    );
  }

  has(name: string): boolean {
    return this.loaded.has(name);
  }

  list(): PluginInfo[] {
    return [...this.loaded.values()].map((entry) => this.info(entry));
  }

  /** The raw config (as the config file gives it, before its schema) the serving generation of `name` was set up with. @throws HarnessError `UNKNOWN_PLUGIN`. */
  configOf(name: string): unknown {
    return this.require(name).rawConfig;
  }

  /** The definition object the serving generation of `name` runs. @throws HarnessError `UNKNOWN_PLUGIN`. */
  definitionOf(name: string): PluginDefinition<any> {
    return this.require(name).definition;
  }

  /**
   * Unloads every plugin, last loaded first, and waits for retired generations to finish. Loads and
   * reloads already under way are waited for first (and then unloaded); later ones are refused with
   * `HOST_DISPOSED`.
   */
  async dispose(): Promise<void> {
    this.disposed = true;
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    for (const name of [...this.loaded.keys()].reverse()) await this.unload(name);
    while (this.retiring.size > 0) await Promise.all([...this.retiring]);
  }

  /** Runs a load or reload, refused once the host is disposed; dispose waits for it. */
  private track<T>(operation: () => Promise<T>): Promise<T> {
    if (this.disposed) {
      return Promise.reject(new HarnessError('HOST_DISPOSED', 'The plugin host is disposed; it loads and reloads no plugins.'));
    }
    return this.trackAlways(operation);
  }

  private trackAlways<T>(operation: () => Promise<T>): Promise<T> {
    const result = operation();
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.inflight.add(settled);
    void settled.then(() => this.inflight.delete(settled));
    return result;
  }

  private async setUp(definition: PluginDefinition<any>, modulePath: string | undefined, rawConfig: unknown, generation: number, order: number): Promise<Loaded> {
    const config = parseConfig(definition, rawConfig, this.configPath);
    const fiber = new Fiber(`plugin:${definition.name}#${generation}`, (d) => this.kernel.bus.report(d));
    const scope = new Scope(fiber, { staged: true });
    const ctx = this.kernel.createContext(scope, { name: definition.name, generation, order });
    try {
      await fiber.run(() => definition.setup(ctx, config));
    } catch (error) {
      await fiber.dispose();
      throw setupFailed(definition.name, error, this.configPath);
    }
    return { definition, modulePath, rawConfig, generation, order, fiber, scope };
  }

  private async importDefinition(path: string): Promise<PluginDefinition<any>> {
    const module = await importGeneration(path);
    const candidate = module.default ?? module.plugin;
    if (!isPluginDefinition(candidate)) {
      throw new HarnessError('INVALID_PLUGIN', `Module ${path} does not export a plugin: make its default export the result of definePlugin({ name, setup }).`);
    }
    return candidate;
  }

  private resolvePath(path: string): string {
    return resolveModule(path, this.baseDir);
  }

  private require(name: string): Loaded {
    const entry = this.loaded.get(name);
    if (entry === undefined) {
      const known = [...this.loaded.keys()].join(', ') || 'none';
      throw new HarnessError('UNKNOWN_PLUGIN', `No plugin named "${name}" is loaded (loaded: ${known}).`);
    }
    return entry;
  }

  private info(entry: Loaded): PluginInfo {
    return Object.freeze({ name: entry.definition.name, generation: entry.generation, ...(entry.modulePath ? { module: entry.modulePath } : {}) });
  }

  private reloadFailed(current: Loaded, error: unknown, changed: { configKeys?: readonly string[] }): void {
    this.kernel.bus.emit('plugin/reload-failed', {
      name: current.definition.name,
      ...(current.modulePath ? { module: current.modulePath } : {}),
      generation: current.generation,
      failure: toFailure(error),
      error,
      ...changed,
    });
  }

  /** Disposes a swapped-out generation in the background (its in-flight calls may still drain). */
  private retire(fiber: Fiber): void {
    const done = fiber.dispose().finally(() => this.retiring.delete(done));
    this.retiring.add(done);
  }

  /** Operations on one plugin name run one after another. */
  private serialize<T>(name: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(name) ?? Promise.resolve();
    const result = previous.then(operation, operation);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(name, tail);
    void tail.then(() => {
      if (this.queues.get(name) === tail) this.queues.delete(name);
    });
    return result;
  }
}

/**
 * Validates a plugin's raw config with its zod schema. Unknown keys are errors, in a plain
 * `z.object` too (see config-check.ts); a schema accepts extra keys only by saying so
 * (`z.looseObject`, `.catchall()`).
 * @param configPath The config file the raw config was written in: each issue whose key is written
 *   there exactly once gets its `file:line:col`.
 * @throws HarnessError `INVALID_CONFIG` naming the plugin and each bad field's path (`UNKNOWN_KEY`
 *   issues with "did you mean").
 */
export function parseConfig<C>(definition: PluginDefinition<C>, raw: unknown, configPath?: string): C {
  if (definition.config === undefined) return raw as C;
  const checked = checkConfig(definition.config, raw ?? {});
  if (checked.status === 'passed') return checked.value;
  throw invalidConfig({
    heading: `Plugin "${definition.name}" has an invalid config:`,
    issues: checked.issues,
    footer: "Fix these fields in this plugin's entry of the harness config.",
    ...(configPath === undefined ? {} : { configPath }),
    details: { plugin: definition.name },
  });
}

/**
 * The top-level keys whose values differ between two raw plugin configs (sorted); `['(config)']`
 * when either is not a plain object and they differ.
 */
export function changedKeys(before: unknown, after: unknown): string[] {
  if (isDeepStrictEqual(before, after)) return [];
  const plain = (value: unknown): value is Record<string, unknown> | undefined => value === undefined || (typeof value === 'object' && value !== null && !Array.isArray(value));
  if (!plain(before) || !plain(after)) return ['(config)'];
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  return [...keys].filter((key) => !isDeepStrictEqual(before?.[key], after?.[key])).sort();
}

/**
 * The error of a failed setup. A setup may throw `INVALID_CONFIG` with `issues` (paths inside its own
 * config) for a value its schema cannot judge (a file that is not there): it is reported like a
 * schema issue — headed with the plugin's name, each key's `file:line:col` in `configPath`.
 */
function setupFailed(name: string, error: unknown, configPath: string | undefined): HarnessError {
  if (HarnessError.is(error) && error.code === 'INVALID_CONFIG' && error.issues.length > 0 && error.failure.plugin === undefined) {
    return invalidConfig({
      heading: `Plugin "${name}" has an invalid config:`,
      issues: error.issues,
      footer: "Fix these fields in this plugin's entry of the harness config.",
      ...(configPath === undefined ? {} : { configPath }),
      details: { plugin: name },
    });
  }
  if (HarnessError.is(error) && (error.code === 'PLUGIN_SETUP_FAILED' || error.code === 'INVALID_CONFIG')) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new HarnessError('PLUGIN_SETUP_FAILED', `Setup of plugin "${name}" failed: ${message}`, {
    cause: error,
    details: { plugin: name, ...(HarnessError.is(error) ? { causeCode: error.code } : {}) },
  });
}
