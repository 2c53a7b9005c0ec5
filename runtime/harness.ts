/**
 * `defineConfig` and `createHarness` (DESIGN "Layout", kernel issue "Config"): load
 * `harness.config.ts` (through tsx), build the kernel and the runtime services, load the plugins in
 * order. The runtime never imports a plugin: plugins are named by module path in the config.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kernel, type PluginContext } from './kernel/context.ts';
import { HarnessError } from './kernel/errors.ts';
import { Fiber, Scope } from './kernel/fiber.ts';
import { importGeneration } from './kernel/module-loader.ts';
import { PluginHost, type PluginSpec } from './kernel/plugin.ts';
import { LlmService } from './llm/service.ts';
import type { RetryPolicyConfig } from './llm/call-config.ts';
import { runtimeExtensions } from './extensions.ts';
import { ToolRegistry } from './agent/tools.ts';
import { AgentSession } from './agent/session.ts';
import { createJournal, openJournal } from './session/journal.ts';
import type { RepairReport } from './session/types.ts';

/** Where things are, for plugins that read files named in the config. */
export interface HarnessPaths {
  /** The config file's folder (or the harness's base folder): relative paths in plugin configs resolve here. */
  readonly baseDir: string;
  /** The data directory (`<dataDir>/sessions/` holds the journals). */
  readonly dataDir: string;
}

declare module './kernel/context.ts' {
  interface PluginContext {
    readonly paths: HarnessPaths;
  }
}

export interface HarnessConfig {
  /** Where journals live (`<dataDir>/sessions/`). Default: `$HARNESS_HOME`, else `~/.harness`. */
  readonly dataDir?: string;
  /** The call config new sessions start with. */
  readonly defaults?: {
    readonly provider: string;
    readonly model: string;
    readonly reasoningEffort?: string;
    readonly system?: string;
  };
  /** A retry-policy layer over each provider's own. */
  readonly retry?: RetryPolicyConfig;
  /** Plugins, loaded in order. Module paths resolve from the config file's folder. */
  readonly plugins: readonly PluginSpec[];
}

/** Types a `harness.config.ts` default export. */
export function defineConfig<const C extends HarnessConfig>(config: C): C {
  return config;
}

export interface Harness {
  readonly kernel: Kernel;
  readonly host: PluginHost;
  readonly llm: LlmService;
  readonly tools: ToolRegistry;
  /** A context for application code: registrations made here are live at once. */
  readonly ctx: PluginContext;
  readonly config: HarnessConfig;
  /** Absolute path of the config file, when one was loaded. */
  readonly configPath?: string;
  readonly dataDir: string;
  /**
   * Starts a new session (a new journal in `<dataDir>/sessions/`).
   * @throws HarnessError `JOURNAL_EXISTS` (an id already used), `INVALID_SESSION_ID`.
   */
  createSession(options?: SessionOptions & { id?: string }): Promise<AgentSession>;
  /**
   * Resumes a session by id or journal path: opens it for writing (repairing what a crash left)
   * and returns a session whose next run continues it.
   * @throws HarnessError `JOURNAL_NOT_FOUND`, `JOURNAL_LOCKED`, `JOURNAL_CORRUPT`, `JOURNAL_VERSION`, …
   */
  openSession(idOrPath: string, options?: SessionOptions): Promise<{ session: AgentSession; repairs: RepairReport }>;
  /** Closes every session it made, unloads every plugin (last first) and disposes the root context. */
  dispose(): Promise<void>;
}

export interface SessionOptions {
  /** The workspace (default: the journal's `cwd`, else the process's). */
  readonly cwd?: string;
  /** Steps per turn (default 100). */
  readonly maxSteps?: number;
}

export interface CreateHarnessOptions {
  /** Path of a config module (default export `defineConfig(...)`). */
  configPath?: string;
  /** A config object (instead of a file); module paths resolve from `baseDir`. */
  config?: HarnessConfig;
  /** Folder that relative plugin module paths resolve from when `config` is given. Default cwd. */
  baseDir?: string;
  /** Overrides the config's data directory. */
  dataDir?: string;
}

/**
 * Builds a harness: kernel, `ctx.llm` and the other runtime services, then the configured plugins.
 * @throws HarnessError `CONFIG_NOT_FOUND`, `INVALID_CONFIG`, or a plugin's load error (everything
 *   loaded before it is unloaded again).
 */
export async function createHarness(options: CreateHarnessOptions = {}): Promise<Harness> {
  const configPath = options.configPath === undefined ? undefined : resolve(options.configPath);
  const config = options.config ?? (configPath ? await loadConfig(configPath) : { plugins: [] });
  validateConfig(config, configPath);
  const baseDir = configPath ? dirname(configPath) : resolve(options.baseDir ?? process.cwd());
  const kernel = new Kernel();
  const llm = new LlmService(kernel);
  const dataDir = resolveDataDir(options.dataDir ?? config.dataDir, baseDir);
  for (const hook of ['agent/request', 'agent/pre-step', 'agent/request-error', 'tools/execute'] as const) kernel.bus.declare(hook, 'waterfall');
  kernel.bus.declare('session/event', 'sink');
  const tools = new ToolRegistry();
  const paths: HarnessPaths = Object.freeze({ baseDir, dataDir });
  kernel.extend((scope, owner) => ({ tools: tools.contextFor(scope, owner), paths }));
  for (const extension of runtimeExtensions) extension({ kernel, llm, config, dataDir });
  const host = new PluginHost(kernel, { baseDir });
  const rootFiber = new Fiber('harness', (d) => kernel.bus.report(d));
  const ctx = kernel.createContext(new Scope(rootFiber, { staged: false }), { name: 'harness', generation: 1 });
  const sessions = new Set<AgentSession>();
  const defaults = config.defaults ?? { provider: 'scripted', model: 'scripted-default' };
  const makeSession = (journal: Awaited<ReturnType<typeof createJournal>>, cwd: string, options: SessionOptions): AgentSession => {
    const session = new AgentSession({
      journal,
      bus: kernel.bus,
      llm,
      tools,
      defaults,
      cwd,
      ...(config.retry ? { retryPolicy: config.retry } : {}),
      ...(options.maxSteps ? { maxSteps: options.maxSteps } : {}),
      onClose: () => sessions.delete(session),
    });
    sessions.add(session);
    return session;
  };
  const harness: Harness = {
    kernel,
    host,
    llm,
    tools,
    ctx,
    config,
    ...(configPath ? { configPath } : {}),
    dataDir,
    async createSession(options = {}) {
      const cwd = resolve(options.cwd ?? process.cwd());
      const journal = await createJournal({ dataDir, cwd, bus: kernel.bus, ...(options.id ? { id: options.id } : {}) });
      return makeSession(journal, cwd, options);
    },
    async openSession(idOrPath, options = {}) {
      const { journal, repairs } = await openJournal(idOrPath, { dataDir, bus: kernel.bus });
      const cwd = resolve(options.cwd ?? journal.header.cwd ?? process.cwd());
      return { session: makeSession(journal, cwd, options), repairs };
    },
    async dispose() {
      for (const session of [...sessions]) await session.close();
      await host.dispose();
      await rootFiber.dispose();
    },
  };
  try {
    for (const spec of config.plugins) await host.load(spec);
  } catch (error) {
    await harness.dispose();
    throw error;
  }
  return harness;
}

/** Imports a config module through tsx. @throws HarnessError `CONFIG_NOT_FOUND`, `INVALID_CONFIG`. */
export async function loadConfig(path: string): Promise<HarnessConfig> {
  const absolute = resolve(path);
  if (!existsSync(absolute)) {
    throw new HarnessError('CONFIG_NOT_FOUND', `No config file at ${absolute}. Create one that exports defineConfig({ plugins: [...] }) or pass another path with --config.`);
  }
  let module: { default?: unknown };
  try {
    module = await importConfigModule(absolute);
  } catch (error) {
    const cause = HarnessError.is(error) && error.code === 'PLUGIN_IMPORT_FAILED' ? error.cause : error;
    throw new HarnessError('INVALID_CONFIG', `Could not load config ${absolute}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  const config = (module.default ?? (module as { default?: { default?: unknown } }).default?.default) as HarnessConfig | undefined;
  if (config === undefined) throw new HarnessError('INVALID_CONFIG', `Config ${absolute} has no default export; end it with export default defineConfig({ ... }).`);
  return config;
}

/**
 * Imports the config as a fresh module generation in this process's own module graph, so the config
 * and the plugins it names share this runtime (one `HarnessError`, one extension list…) and an
 * edited config is re-read. Only where no TypeScript loader is active does it fall back to tsx's
 * `tsImport` (which loads a separate copy of every project module the config imports).
 */
async function importConfigModule(absolute: string): Promise<{ default?: unknown }> {
  try {
    return await importGeneration(absolute);
  } catch (error) {
    const cause = HarnessError.is(error) ? (error.cause as { code?: unknown } | undefined) : undefined;
    if (cause?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw error;
    const { tsImport } = await import('tsx/esm/api');
    return (await tsImport(pathToFileURL(absolute).href, import.meta.url)) as { default?: unknown };
  }
}

function validateConfig(config: HarnessConfig, path: string | undefined): void {
  const where = path ?? 'the harness config';
  if (typeof config !== 'object' || config === null || !Array.isArray(config.plugins)) {
    throw new HarnessError('INVALID_CONFIG', `${where} must export { plugins: [...] } (a list of { module, config } entries).`);
  }
  config.plugins.forEach((spec, index) => {
    if (typeof spec !== 'object' || spec === null || (spec.module === undefined && spec.plugin === undefined)) {
      throw new HarnessError('INVALID_CONFIG', `plugins[${index}] in ${where} needs a "module" path (or a "plugin" definition).`);
    }
  });
  if (config.defaults !== undefined && (typeof config.defaults.provider !== 'string' || typeof config.defaults.model !== 'string')) {
    throw new HarnessError('INVALID_CONFIG', `defaults in ${where} needs a provider and a model, e.g. { provider: 'scripted', model: 'scripted-default' }.`);
  }
}

/** `$HARNESS_HOME`, else `~/.harness`; an explicit directory wins (relative to `baseDir`). */
export function resolveDataDir(explicit: string | undefined, baseDir = process.cwd()): string {
  if (explicit !== undefined) return isAbsolute(explicit) ? explicit : resolve(baseDir, explicit);
  const home = process.env.HARNESS_HOME;
  if (home) return resolve(home);
  return join(homedir(), '.harness');
}
