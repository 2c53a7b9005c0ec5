/**
 * `defineConfig` and `createHarness` (DESIGN "Layout", kernel issue "Config"): load
 * `harness.config.ts` (through tsx), build the kernel and the runtime services, load the plugins in
 * order. The runtime never imports a plugin: plugins are named by module path in the config.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { Kernel, type PluginContext } from './kernel/context.ts';
import { checkConfig, invalidConfig } from './kernel/config-check.ts';
import { HarnessError } from './kernel/errors.ts';
import { Fiber, Scope } from './kernel/fiber.ts';
import { causeMessage, locateKey, syntaxErrorOf } from './kernel/key-location.ts';
import { importGeneration } from './kernel/module-loader.ts';
import { isPluginDefinition, PluginHost, type PluginSpec } from './kernel/plugin.ts';
import { z } from 'zod';
import { LlmService } from './llm/service.ts';
import type { RetryPolicyConfig } from './llm/call-config.ts';
import { ToolRegistry } from './agent/tools.ts';
import { AgentSession } from './agent/session.ts';
import { FileJournalStore } from './session/file-store.ts';
import { createJournal, openJournal } from './session/open.ts';
import { harnessHomeDir } from './session/paths.ts';
import { fileStoreDir, isFileStoreSpec, openRegisteredStore, type JournalStore } from './session/store.ts';
import type { RepairReport } from './session/types.ts';
import type { ParentSessionLink } from './session/events.ts';
import { journalReloads } from './reload-journal.ts';

/** Where things are, for plugins that read files named in the config. */
export interface HarnessPaths {
  /** The config file's folder (or the harness's base folder): relative paths in plugin configs resolve here. */
  readonly baseDir: string;
  /** The data directory (`<dataDir>/sessions/` holds the journals). */
  readonly dataDir: string;
}

/** Options of a new session: `harness.createSession()` / `ctx.sessions.create()`. */
export interface CreateSessionOptions extends SessionOptions {
  readonly id?: string;
  /** The session this one was forked from, and the seq it was forked at. */
  readonly parent?: { readonly sessionId: string; readonly seq: number };
  /** The session that spawned this one (a subagent): journaled in the header. */
  readonly parentSession?: ParentSessionLink;
}

/**
 * `ctx.sessions`: sessions of the running harness, for a plugin that runs one of its own — a
 * subagent tool spawning a child session in the same store and workspace (seed 000 "Subagent 接口":
 * the runner is injected by the assembly layer, so tools never depend on what assembles them).
 */
export interface SessionsService {
  /** Same as `harness.createSession()`. */
  create(options?: CreateSessionOptions): Promise<AgentSession>;
}

declare module './kernel/context.ts' {
  interface PluginContext {
    readonly paths: HarnessPaths;
    readonly sessions: SessionsService;
  }
}

/** What `harness.config.ts` default-exports through `defineConfig` (checked: unknown keys are `INVALID_CONFIG`). */
export interface HarnessConfig {
  /** Where journals live (`<dataDir>/sessions/`). Default: `$HARNESS_HOME`, else `~/.harness`. */
  readonly dataDir?: string;
  /**
   * The journal store: `'file'` (default: the JSONL files of `dataDir`), `'file:<dir>'` (the JSONL
   * files of data directory `<dir>`, relative to the config's folder), or a URL whose scheme a
   * loaded plugin registered (`postgres://user@host:5432/db` with the journal-postgres plugin).
   * `createHarness({ store })` (the CLI's `--store`) overrides it.
   */
  readonly store?: string;
  /** The call config new sessions start with. Absent: each run names its provider and model, else it throws `NO_DEFAULT_MODEL` (the runtime knows no default model). */
  readonly defaults?: {
    readonly provider: string;
    readonly model: string;
    readonly reasoningEffort?: string;
    readonly system?: string;
  };
  /** A retry-policy layer over each provider's own. */
  readonly retry?: RetryPolicyConfig;
  /**
   * Steps per turn before the turn ends `MAX_STEPS_EXCEEDED` (an integer; default 100). 0 or less
   * means no limit (as peers do). A session's own `maxSteps` wins.
   */
  readonly maxSteps?: number;
  /** Plugins, loaded in order. A `module` is a path (relative to the config file's folder) or a package specifier (`harness-runtime/plugins/llm-openai`), resolved from that folder. */
  readonly plugins: readonly PluginSpec[];
}

/** Types a `harness.config.ts` default export. */
export function defineConfig<const C extends HarnessConfig>(config: C): C {
  return config;
}

/** A running harness (from `createHarness`): kernel, plugins, `ctx`, and the sessions it makes. */
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
  /** The journal store sessions are created in and opened from (DESIGN "Stores"). */
  readonly store: JournalStore;
  /**
   * Starts a new session (a new journal in `<dataDir>/sessions/`).
   * @throws HarnessError `WORKSPACE_NOT_FOUND` (cwd is not a directory), `JOURNAL_EXISTS` (an id already used), `INVALID_SESSION_ID`.
   */
  createSession(options?: CreateSessionOptions): Promise<AgentSession>;
  /**
   * Resumes a session by id or journal path: opens it for writing (repairing what a crash left)
   * and returns a session whose next run continues it.
   * @throws HarnessError `JOURNAL_NOT_FOUND`, `JOURNAL_LOCKED`, `JOURNAL_CORRUPT`, `JOURNAL_VERSION`,
   *   `WORKSPACE_NOT_FOUND` (the session's workspace is gone and no other `cwd` was given), …
   */
  openSession(idOrPath: string, options?: SessionOptions): Promise<{ session: AgentSession; repairs: RepairReport }>;
  /** Closes every session it made, unloads every plugin (last first) and disposes the root context. */
  dispose(): Promise<void>;
}

/** Options of `harness.createSession()` / `openSession()`. */
export interface SessionOptions {
  /** The workspace (default: the journal's `cwd`, else the process's). */
  readonly cwd?: string;
  /** Steps per turn (an integer; default: the config's, else 100); 0 or less means no limit. */
  readonly maxSteps?: number;
  /** Mints the ids of the messages the loop makes (default `crypto.randomUUID`). */
  readonly newId?: () => string;
  /** The journal's clock for `atMs` (default `Date.now`). With `newId`, a re-run writes the same journal twice. */
  readonly now?: () => number;
}

/** Options of `createHarness()`: a config file or a config object, and overrides. */
export interface CreateHarnessOptions {
  /** Path of a config module (default export `defineConfig(...)`). */
  configPath?: string;
  /** A config object (instead of a file); module paths resolve from `baseDir`. */
  config?: HarnessConfig;
  /** Folder that relative plugin module paths resolve from when `config` is given. Default cwd. */
  baseDir?: string;
  /** Overrides the config's data directory. */
  dataDir?: string;
  /**
   * Overrides the config's store: `'file'`, `'file:<dir>'` (that data directory, relative to the
   * process's cwd; it wins over `dataDir`), a URL of a registered scheme, or a store object (the
   * caller keeps owning it: `dispose` does not close it).
   */
  store?: string | JournalStore;
  /**
   * Called when a plugin of the config fails to load: return to go on without it (the harness starts
   * with the plugins that loaded; `harness dev` waits for a fix this way), or throw to fail. Default:
   * the load error is thrown (and everything loaded before it is unloaded again).
   */
  onPluginError?: (error: unknown, spec: PluginSpec) => void;
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
  const storeSpec = options.store ?? config.store;
  // `file:<dir>` names the data directory itself (a config's relative dir resolves from its folder).
  const fileDir = typeof storeSpec === 'string' ? fileStoreDir(storeSpec, options.store === undefined ? baseDir : process.cwd()) : undefined;
  const dataDir = fileDir ?? resolveDataDir(options.dataDir ?? config.dataDir, baseDir);
  for (const hook of ['agent/request', 'agent/pre-step', 'agent/request-error', 'tools/execute'] as const) kernel.bus.declare(hook, 'waterfall');
  kernel.bus.declare('session/event', 'sink');
  kernel.bus.declare('session/written', 'emit');
  const tools = new ToolRegistry();
  const paths: HarnessPaths = Object.freeze({ baseDir, dataDir });
  const sessionsService: SessionsService = Object.freeze({ create: (options?: CreateSessionOptions) => harness.createSession(options) });
  kernel.extend((scope, owner) => ({ tools: tools.contextFor(scope, owner), paths, sessions: sessionsService }));
  const host = new PluginHost(kernel, { baseDir, ...(configPath ? { configPath } : {}) });
  const sessions = new Set<AgentSession>();
  const stopJournalingReloads = journalReloads(kernel.bus, () => sessions);
  const rootFiber = new Fiber('harness', (d) => kernel.bus.report(d));
  const ctx = kernel.createContext(new Scope(rootFiber, { staged: false }), { name: 'harness', generation: 1 });
  const makeSession = (journal: Awaited<ReturnType<typeof createJournal>>, cwd: string, options: SessionOptions): AgentSession => {
    const session = new AgentSession({
      journal,
      bus: kernel.bus,
      llm,
      tools,
      ...(config.defaults ? { defaults: config.defaults } : {}),
      ...(configPath ? { configPath } : {}),
      cwd,
      ...(config.retry ? { retryPolicy: config.retry } : {}),
      ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : config.maxSteps !== undefined ? { maxSteps: config.maxSteps } : {}),
      ...(options.newId ? { newId: options.newId } : {}),
      onClose: () => sessions.delete(session),
    });
    sessions.add(session);
    return session;
  };
  let store: JournalStore | undefined;
  let ownsStore = false;
  const harness: Harness = {
    get store(): JournalStore {
      if (store === undefined) throw new HarnessError('STORE_UNAVAILABLE', 'The harness has no journal store yet (it is opened after the plugins load) or any more (it was disposed).');
      return store;
    },
    kernel,
    host,
    llm,
    tools,
    ctx,
    config,
    ...(configPath ? { configPath } : {}),
    dataDir,
    async createSession(options = {}) {
      const cwd = requireWorkspace(resolve(options.cwd ?? process.cwd()));
      const journal = await createJournal({
        store: harness.store,
        cwd,
        bus: kernel.bus,
        ...(options.id ? { id: options.id } : {}),
        ...(options.now ? { now: options.now } : {}),
        ...(options.parent ? { parent: options.parent } : {}),
        ...(options.parentSession ? { parentSession: options.parentSession } : {}),
      });
      return makeSession(journal, cwd, options);
    },
    async openSession(idOrPath, options = {}) {
      const cwd = options.cwd === undefined ? undefined : requireWorkspace(resolve(options.cwd));
      const { journal, repairs } = await openJournal(idOrPath, { store: harness.store, bus: kernel.bus, ...(options.now ? { now: options.now } : {}) });
      let workspace: string;
      try {
        workspace = cwd ?? requireWorkspace(resolve(journal.header.cwd ?? process.cwd()));
      } catch (error) {
        await journal.close();
        throw error;
      }
      return { session: makeSession(journal, workspace, options), repairs };
    },
    async dispose() {
      for (const session of [...sessions]) await session.close();
      if (ownsStore && store !== undefined) {
        const closing = store;
        await closing.close().catch((error) =>
          kernel.bus.report({
            level: 'warning',
            code: 'STORE_CLOSE_FAILED',
            source: 'harness',
            message: `Closing the journal store ${closing.location} failed: ${error instanceof Error ? error.message : String(error)}`,
            error,
          }),
        );
      }
      store = undefined;
      stopJournalingReloads();
      await host.dispose();
      await rootFiber.dispose();
    },
  };
  try {
    for (const spec of config.plugins) {
      try {
        await host.load(spec);
      } catch (error) {
        if (options.onPluginError === undefined) throw error;
        options.onPluginError(error, spec);
      }
    }
    // After the plugins: a store plugin registers its URL scheme in its setup.
    const spec = storeSpec;
    if (typeof spec === 'object') store = spec;
    else {
      store = spec === undefined || isFileStoreSpec(spec) ? new FileJournalStore({ dataDir }) : await openRegisteredStore(spec, { dataDir });
      ownsStore = true;
    }
  } catch (error) {
    await harness.dispose();
    throw error;
  }
  return harness;
}

/** The names a project's config file may have, in the order the CLI looks for them. */
export const CONFIG_FILE_NAMES = ['harness.config.ts', 'harness.config.mts', 'harness.config.js', 'harness.config.mjs'] as const;

/**
 * Imports a config module through tsx.
 * @throws HarnessError `CONFIG_NOT_FOUND` (no file there), `INVALID_CONFIG` (a directory, a module
 *   that fails to load, no default export).
 */
export async function loadConfig(path: string): Promise<HarnessConfig> {
  const absolute = resolve(path);
  let info: ReturnType<typeof statSync>;
  try {
    info = statSync(absolute, { throwIfNoEntry: false });
  } catch {
    info = undefined; // unreadable (EACCES, ENOTDIR…): as existsSync saw it, no config there
  }
  if (info === undefined) {
    throw new HarnessError('CONFIG_NOT_FOUND', `No config file at ${absolute}. Create one that exports defineConfig({ plugins: [...] }) or pass another path with --config.`);
  }
  if (info.isDirectory()) {
    // Not a guess at the file inside: the path says which config runs, so it names the file.
    const inside = CONFIG_FILE_NAMES.map((name) => join(absolute, name)).find((file) => existsSync(file));
    throw new HarnessError(
      'INVALID_CONFIG',
      `The config path ${absolute} is a directory; pass the config file itself${inside === undefined ? ` (a module that default-exports defineConfig({ plugins: [...] }), e.g. ${join(absolute, CONFIG_FILE_NAMES[0])})` : `: ${inside}`}.`,
      { details: { configPath: absolute } },
    );
  }
  let module: { default?: unknown };
  try {
    module = await importConfigModule(absolute);
  } catch (error) {
    const cause = HarnessError.is(error) && error.code === 'PLUGIN_IMPORT_FAILED' ? error.cause : error;
    // A helper the config calls refused an unknown key (defaultPlugins({ aprovals })): say where it is written.
    const unknownKeys = HarnessError.is(cause) ? cause.failure.unknownKeys : undefined;
    const key = Array.isArray(unknownKeys) && typeof unknownKeys[0] === 'string' ? unknownKeys[0] : undefined;
    // Or tsx could not compile it: esbuild's message has a 0-based column in bytes; the location goes in the details, 1-based.
    const syntax = syntaxErrorOf(cause);
    const at = key === undefined ? (syntax?.file === absolute ? syntax : undefined) : locateKey(readFileSync(absolute, 'utf8'), key);
    throw new HarnessError('INVALID_CONFIG', `Could not load config ${absolute}: ${causeMessage(cause, syntax, absolute)}`, {
      cause,
      ...(at ? { details: { configPath: absolute, line: at.line, column: at.column } } : {}),
    });
  }
  const config = (module.default ?? (module as { default?: { default?: unknown } }).default?.default) as HarnessConfig | undefined;
  if (config === undefined) throw new HarnessError('INVALID_CONFIG', `Config ${absolute} has no default export; end it with export default defineConfig({ ... }).`);
  return config;
}

/**
 * Imports the config as a fresh module generation in this process's own module graph, so the config
 * and the plugins it names share this runtime (one `HarnessError`, one extension list…) and an
 * edited config is re-read. A TypeScript config on plain node gets tsx's loader (see module-loader.ts).
 */
async function importConfigModule(absolute: string): Promise<{ default?: unknown }> {
  return await importGeneration(absolute);
}

/**
 * `maxSteps`: an integer; a positive one is the limit of steps per turn, 0 or a negative one means
 * no limit (the rule of `resolveMaxSteps`).
 */
const maxStepsSchema = z.number().int('maxSteps must be an integer (0 or less: no limit)');

const configSchema = z.strictObject({
  dataDir: z.string().min(1).optional(),
  store: z.string().min(1).optional(),
  defaults: z.strictObject({ provider: z.string().min(1), model: z.string().min(1), reasoningEffort: z.string().min(1).optional(), system: z.string().optional() }).optional(),
  retry: z
    .strictObject({
      mode: z.enum(['normal', 'always']).optional(),
      maxRetries: z.number().int().min(0).optional(),
      retryableCodes: z.array(z.string()).optional(),
      initialDelayMs: z.number().min(0).optional(),
      maxDelayMs: z.number().min(0).optional(),
      jitterRatio: z.number().min(0).max(1).optional(),
    })
    .optional(),
  maxSteps: maxStepsSchema.optional(),
  plugins: z.array(
    z
      .strictObject({
        module: z.string().min(1).optional(),
        plugin: z.custom<PluginSpec['plugin']>((value) => isPluginDefinition(value), 'expected a plugin made with definePlugin').optional(),
        config: z.unknown().optional(),
      })
      .refine((spec) => spec.module !== undefined || spec.plugin !== undefined, 'a plugin entry needs a "module" path (or a "plugin" definition)'),
  ),
});

/**
 * Checks the config's own shape (not the plugins' configs: each plugin validates its own). Unknown
 * keys are errors, so a typo (`plugns`, `defualts`, `cofig`) is caught, with "did you mean", instead
 * of silently ignored; a key written once in the config file gets its `file:line:col`.
 * @throws HarnessError `INVALID_CONFIG` naming each bad path.
 */
export function validateConfig(config: HarnessConfig, path: string | undefined): void {
  const checked = checkConfig(configSchema, config);
  if (checked.status === 'passed') return;
  throw invalidConfig({
    heading: `${path ?? 'the harness config'} is not a valid harness config:`,
    issues: checked.issues,
    footer: 'A config is defineConfig({ dataDir?, store?, defaults?: { provider, model, reasoningEffort?, system? }, retry?, maxSteps?, plugins: [{ module, config? }] }).',
    ...(path === undefined ? {} : { configPath: path }),
  });
}

/** @throws HarnessError `WORKSPACE_NOT_FOUND` unless `path` is an existing directory. */
function requireWorkspace(path: string): string {
  let isDirectory = false;
  try {
    isDirectory = statSync(path).isDirectory();
  } catch {
    // missing: reported below
  }
  if (!isDirectory) {
    throw new HarnessError('WORKSPACE_NOT_FOUND', `The workspace ${path} is not an existing directory; create it or give another one (--cwd).`, { details: { path } });
  }
  return path;
}

/** `$HARNESS_HOME` (a leading `~/` is the home folder), else `~/.harness`; an explicit directory wins (relative to `baseDir`). */
export function resolveDataDir(explicit: string | undefined, baseDir = process.cwd()): string {
  if (explicit !== undefined) return isAbsolute(explicit) ? explicit : resolve(baseDir, explicit);
  return harnessHomeDir() ?? join(homedir(), '.harness');
}
