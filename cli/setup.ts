/**
 * What the commands share: opening the harness from the config, checking the data directory and
 * the workspace, resolving a session argument, picking the model of a run, approvals, session
 * hints, and the CLI's hint line for an error code.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import {
  createHarness,
  HarnessError,
  isFileStoreSpec,
  redactStoreUrl,
  storeSource,
  type AgentSession,
  type ApproveFn,
  type CreateHarnessOptions,
  type Harness,
  type JournalStore,
  readJournalHeader,
  type LineSource,
  type SessionHeader,
  type SessionSummary,
} from '../runtime/index.ts';
import { columnOfByteOffset, isSessionId, parseHeaderLine, resolveSessionPath, sessionsDir } from '../runtime/internal.ts';
import { defaultConfig } from '../stack/index.ts';
import type { Ask } from './approval.ts';
import { baseOf, journalOfPrefix } from './find-session.ts';
import { configName, configSource, selfCommand, shellQuote, type Io } from './env.ts';
import { oneLine, printable } from './format.ts';

/** Options every command takes. */
export interface GlobalOptions {
  readonly config?: string;
  readonly dataDir?: string;
  /** `--store`: `file` (default), `file:<dir>`, or a store URL (`postgres://…`); overrides the config's `store`. */
  readonly store?: string;
  readonly debug?: boolean;
}

/** The createHarness overrides the global flags give. */
function overrides(globals: GlobalOptions): { dataDir?: string; store?: string } {
  return { ...(globals.dataDir ? { dataDir: globals.dataDir } : {}), ...(globals.store ? { store: globals.store } : {}) };
}

/** The data directory of the harness this process opened last (for error hints). */
export let openedDataDir: string | undefined;

/**
 * Builds the harness a command works with; diagnostics go to stderr (info only with --debug).
 * `onPluginError` (dev): a plugin that fails to load is left out instead of failing the command.
 */
export async function openHarness(globals: GlobalOptions, io: Io, extra: Pick<CreateHarnessOptions, 'onPluginError'> = {}): Promise<Harness> {
  const source = configSource(globals.config);
  const config = source.path === undefined ? { config: defaultConfig(), baseDir: process.cwd() } : { configPath: source.path };
  const harness = await withDataDir(await createHarness({ ...config, ...overrides(globals), ...extra }), globals);
  harness.kernel.bus.add(
    'kernel/diagnostic',
    (diagnostic: { level: string; code: string; message: string }) => {
      if (diagnostic.level === 'info' && !globals.debug) return;
      const colour = diagnostic.level === 'error' ? io.c.red : diagnostic.level === 'warning' ? io.c.yellow : io.c.dim;
      io.err.write(`${colour(`${diagnostic.level} ${diagnostic.code}:`)} ${globals.debug ? printable(diagnostic.message) : oneLine(diagnostic.message, 300)}\n`);
    },
    { owner: 'cli' },
  );
  return harness;
}

/**
 * For commands that only read or copy journals (replay, sessions, fork, import): the config's
 * plugins are loaded when they can be (their event types become known), but a config that does not
 * load (a plugin being edited, say) does not stop a journal from being read — one warning line, and
 * the command goes on without the plugins.
 */
export async function openHarnessForReading(globals: GlobalOptions, io: Io): Promise<Harness> {
  try {
    return await openHarness(globals, io);
  } catch (error) {
    if (!HarnessError.is(error) || error.code === 'DATA_DIR_INVALID' || STORE_ERRORS.has(error.code)) throw error;
    const where = await errorLocation(error, configSource(globals.config).path);
    const message = oneLine(error.message, 240);
    io.err.write(`${io.c.yellow(`warning ${error.code}:`)} ${message}${where && !message.includes(where.at) ? ` (at ${where.at})` : ''} — reading without the config's plugins\n`);
    // A store of a plugin's scheme needs that plugin: without the config's plugins, the built-in stack's.
    const plugins = globals.store && !isFileStoreSpec(globals.store) ? defaultConfig().plugins : [];
    return withDataDir(await createHarness({ config: { plugins }, ...overrides(globals) }), globals);
  }
}

/** Errors of opening the store itself: reading without the config's plugins would not help. */
const STORE_ERRORS: ReadonlySet<string> = new Set(['UNKNOWN_STORE', 'STORE_UNAVAILABLE', 'STORE_SCHEMA_TOO_NEW', 'INVALID_ARGUMENTS']);

/** The harness, once its data directory passed {@link checkDataDir} (else it is disposed and the error thrown). */
async function withDataDir(harness: Harness, globals: GlobalOptions): Promise<Harness> {
  try {
    checkDataDir(harness, globals);
  } catch (error) {
    await harness.dispose();
    throw error;
  }
  openedDataDir = harness.dataDir;
  return harness;
}

/** Where the data directory came from, for messages. */
function dataDirSource(harness: Harness, globals: GlobalOptions): string {
  if (globals.dataDir) return '--data-dir';
  if (harness.config.dataDir !== undefined) return `the config's dataDir (${harness.configPath ?? 'the config'})`;
  if (process.env.HARNESS_HOME) return '$HARNESS_HOME';
  return 'the default, ~/.harness';
}

/**
 * The data directory must be a directory, or not exist yet (it is created with the first journal).
 * @throws HarnessError `DATA_DIR_INVALID` naming the file in the way and where the setting came from.
 */
export function checkDataDir(harness: Harness, globals: GlobalOptions): void {
  const dataDir = harness.dataDir;
  const fail = (file: string) =>
    new HarnessError('DATA_DIR_INVALID', `The data directory ${dataDir} (from ${dataDirSource(harness, globals)}) cannot hold journals: ${file} is a file, not a directory.`, {
      details: { dataDir, file },
    });
  const sessions = join(dataDir, 'sessions');
  for (let path = sessions; ; path = dirname(path)) {
    let info: ReturnType<typeof statOf>;
    try {
      info = statOf(path);
    } catch (error) {
      // EACCES and the like: the directory cannot be reached by this user.
      const code = (error as NodeJS.ErrnoException).code ?? 'UNKNOWN';
      throw new HarnessError('DATA_DIR_INVALID', `The data directory ${dataDir} (from ${dataDirSource(harness, globals)}) cannot be used: ${path}: ${code}.`, {
        cause: error,
        details: { dataDir, file: path, errno: code },
      });
    }
    if (info !== undefined) {
      if (!info.isDirectory()) throw fail(path);
      return;
    }
    if (dirname(path) === path) return;
  }
}

/** `stat`, or undefined when nothing is there (also when a parent on the way is a file: ENOTDIR). */
export function statOf(path: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw error;
  }
}

/**
 * The journal a session argument names: an id whose journal exists, else an existing file (so
 * `replay package.json` reads that file, not `sessions/package.json.jsonl`), else the one session
 * whose id starts with it, else an id or a path by the runtime's rule (a separator or `.jsonl` makes
 * it a path).
 * @throws HarnessError `NOT_A_JOURNAL_FILE` for a directory, `INVALID_SESSION_ID`, `AMBIGUOUS_SESSION`.
 */
export function sessionPath(argument: string, dataDir: string): string {
  let path: string;
  if (isSessionId(argument) && existsSync(resolveSessionPath(argument, dataDir))) path = resolveSessionPath(argument, dataDir);
  else if (argument !== '' && existsSync(resolve(argument))) path = resolve(argument);
  else path = journalOfPrefix(argument, dataDir) ?? resolveSessionPath(argument, dataDir);
  if (statOf(path)?.isDirectory()) {
    throw new HarnessError('NOT_A_JOURNAL_FILE', `${path} is a directory, not a journal file; give a session id or the path of a .jsonl journal.`, { details: { path } });
  }
  return path;
}

/**
 * The session a command argument names in the harness's store, as the store's functions take it:
 * in the file store, the journal's path ({@link sessionPath}); in another store, the session id —
 * the argument itself, or the one id it is a unique prefix of.
 * @throws HarnessError `INVALID_SESSION_ID`, `AMBIGUOUS_SESSION`, `JOURNAL_NOT_FOUND`, the store's errors.
 */
export async function sessionRef(argument: string, harness: Harness): Promise<string> {
  const store = harness.store;
  if (store.kind === 'file') return sessionPath(argument, harness.dataDir);
  if (!isSessionId(argument)) {
    throw new HarnessError('INVALID_SESSION_ID', `${JSON.stringify(printable(argument))} is not a session id; a session in ${store.location} is named by its id or a unique prefix of it.`, {
      details: { argument },
    });
  }
  const ids = (await store.list()).map((summary) => summary.id);
  if (ids.includes(argument)) return argument;
  const matches = ids.filter((id) => id.startsWith(argument)).sort();
  const base = matches.length > 0 ? baseOf(matches) : undefined;
  if (base !== undefined) return base;
  if (matches.length > 1) {
    throw new HarnessError('AMBIGUOUS_SESSION', `"${printable(argument)}" is the start of ${matches.length} session ids: ${matches.slice(0, 8).join(', ')}. Give more of the id.`, {
      details: { prefix: argument, candidates: matches },
    });
  }
  throw new HarnessError('JOURNAL_NOT_FOUND', `No session ${JSON.stringify(printable(argument))} in ${store.location}.`, { details: { location: store.location, sessionId: argument } });
}

/** What a reader reads for a {@link sessionRef}: the journal path in the file store, else the store's lines of the session (one read each). */
export function sessionSource(harness: Harness, ref: string): string | LineSource {
  return harness.store.kind === 'file' ? ref : storeSource(harness.store, ref);
}

/**
 * The header of the session of a {@link sessionRef} (reads only its first line).
 * @throws HarnessError `JOURNAL_NOT_FOUND`, `JOURNAL_HEADER`, `JOURNAL_VERSION`.
 */
export async function sessionHeader(harness: Harness, ref: string): Promise<SessionHeader> {
  const store = harness.store;
  if (store.kind === 'file') return readJournalHeader(ref);
  for await (const lines of store.read(ref, { toSeq: 0 })) return parseHeaderLine(lines[0]?.text, store.locationOf(ref));
  return parseHeaderLine(undefined, store.locationOf(ref));
}

/** The {@link sessionRef} of a session the harness opened. */
export function refOfSession(harness: Harness, session: { readonly id: string; readonly path: string }): string {
  return harness.store.kind === 'file' ? session.path : session.id;
}

/** What a reader reads for a session the harness opened: its journal file, or its lines in the store (one read each). */
export function sourceOfSession(harness: Harness, session: { readonly id: string; readonly path: string }): string | LineSource {
  return harness.store.kind === 'file' ? session.path : storeSource(harness.store, session.id);
}

/** Where the harness's sessions are, for messages: `<dataDir>/sessions`, or the store's location (no password). */
export function storeName(harness: Harness): string {
  return harness.store.kind === 'file' ? `${harness.dataDir}/sessions` : harness.store.location;
}

/** The reference (see {@link sessionRef}) of a listed session: its path in the file store, else its id. */
export function refOfSummary(summary: SessionSummary, store: JournalStore): string {
  return store.kind === 'file' ? summary.path : summary.id;
}

/**
 * What to type to name a journal in another command: its file's id when it is in the data
 * directory's sessions folder (even when its header says another id: a copied journal), else its path.
 */
export function sessionArgument(path: string, dataDir: string): string {
  // Another store's location: `<store URL>#<id>`.
  const hash = path.lastIndexOf('#');
  if (hash > 0 && /^[a-z][a-z0-9+.-]*:\/\//i.test(path) && isSessionId(path.slice(hash + 1))) return path.slice(hash + 1);
  const name = basename(path, '.jsonl');
  if (dirname(path) === sessionsDir(dataDir) && path.endsWith('.jsonl') && isSessionId(name)) return name;
  return path;
}

/**
 * The workspace a run works in must be an existing directory: `--cwd`, else (resuming) the
 * session's own.
 * @throws HarnessError `WORKSPACE_NOT_FOUND`.
 */
export function checkWorkspace(path: string, from: '--cwd' | 'session'): string {
  const info = statOf(path);
  if (info?.isDirectory()) return path;
  const what = info === undefined ? 'does not exist' : 'is not a directory';
  if (from === '--cwd') throw new HarnessError('WORKSPACE_NOT_FOUND', `--cwd ${path} ${what}; give the directory the tools should work in.`, { details: { path } });
  throw new HarnessError('WORKSPACE_NOT_FOUND', `The session's workspace ${path} ${what} any more; resume it in another directory with --cwd <dir>.`, { details: { path } });
}

/** Options of the commands that run turns (`run`, `chat`, `dev`). */
export interface TurnOptions {
  readonly provider?: string;
  readonly model?: string;
  readonly approve?: string;
  readonly cwd?: string;
  /** A session argument; `true` for `-r` with no id (the picker, chat and dev only). */
  readonly resume?: string | true;
  /** `-c`: the latest session of the workspace. */
  readonly continue?: boolean;
  readonly reasoningEffort?: string;
  /** `--max-prompt-bytes`: the largest prompt taken, bytes of UTF-8 (default: cli/prompt.ts's, 1 MiB). */
  readonly maxPromptBytes?: number;
}

/**
 * The provider and model a run asks for, or nothing to keep the session's (its last request header,
 * else the config's defaults). `--provider` without `--model` takes the config's default model when
 * the provider is the default one, else the provider's first listed model. The call is prepared once
 * here, so an unknown provider, model or reasoning effort — or a missing API key (the adapter's
 * preflight) — fails before anything is journaled.
 * @throws HarnessError `NO_ADAPTER`, `UNKNOWN_MODEL`, `UNSUPPORTED_REASONING_EFFORT`, `NO_MODELS`, `AUTH`.
 */
export async function resolveCall(harness: Harness, options: TurnOptions, session?: AgentSession): Promise<{ provider?: string; model?: string }> {
  const defaults = harness.config.defaults;
  const last = session?.state.header?.config;
  const provider = options.provider;
  let model = options.model;
  if (provider === undefined && last === undefined && defaults === undefined) {
    const where = harness.configPath ?? 'the config';
    throw new HarnessError(
      'NO_DEFAULT_MODEL',
      `No model to call: ${where} has no defaults and no --provider was given. Add defaults: { provider, model } to ${where}, or pass --provider <id> (and --model <id>).`,
      { details: { ...(harness.configPath ? { path: harness.configPath } : {}) } },
    );
  }
  if (provider !== undefined && model === undefined) {
    if (provider === last?.provider) model = last.model;
    else if (provider === defaults?.provider) model = defaults.model;
    else {
      const models = await harness.llm.listModels(provider);
      if (models.length === 0) throw new HarnessError('NO_MODELS', `Provider "${provider}" lists no models; name one with --model.`);
      model = models[0]!.id;
    }
  }
  // Past the check above, a provider comes from the options, the session or the defaults; a model with it.
  const effective = { provider: (provider ?? last?.provider ?? defaults?.provider)!, model: (model ?? (provider === undefined ? last?.model : undefined) ?? defaults?.model)! };
  const reasoningEffort = options.reasoningEffort ?? defaults?.reasoningEffort;
  try {
    await harness.llm.prepareCall({ ...effective, ...(reasoningEffort ? { reasoningEffort } : {}) });
  } catch (error) {
    // Say where a value the user did not type came from, so the right place gets fixed.
    const from = (field: 'provider' | 'model' | 'reasoningEffort'): string | undefined => {
      const given = field === 'provider' ? options.provider : field === 'model' ? options.model : options.reasoningEffort;
      if (given !== undefined) return undefined;
      if (field !== 'reasoningEffort' && last?.[field] === effective[field]) return `${field} "${effective[field]}" is the session's last call's`;
      return `${field} comes from defaults.${field} in ${harness.configPath ?? 'the built-in stack'}`;
    };
    const field = !HarnessError.is(error)
      ? undefined
      : error.code === 'UNKNOWN_MODEL'
        ? 'model'
        : error.code === 'NO_ADAPTER'
          ? 'provider'
          : error.code === 'UNSUPPORTED_REASONING_EFFORT'
            ? 'reasoningEffort'
            : undefined;
    const origin = field === undefined ? undefined : from(field);
    if (origin === undefined || !HarnessError.is(error)) throw error;
    throw new HarnessError(error.code, `${error.message} (The ${origin}.)`, { cause: error, details: { ...error.failure } });
  }
  if (provider === undefined && model === undefined) return {};
  return { provider: effective.provider, model: effective.model };
}

export const POLICIES = ['allow-all', 'read-only', 'always-ask', 'deny-all'] as const;

/**
 * The approver for `--approve <policy>`, from the approvals plugin (`ctx.approvals`). A person's
 * "no" is journaled with what they actually did (`Ask`'s reason: "the user said no" only for an
 * explicit no). Without the plugin there is no approver, and the loop denies every call.
 * @throws HarnessError `UNKNOWN_POLICY`; `NO_APPROVALS_PLUGIN` when a policy is asked for but the
 *   config does not load the approvals plugin.
 */
export function makeApprover(harness: Harness, policy: string | undefined, ask: Ask | undefined): ApproveFn | undefined {
  const approvals = harness.ctx.approvals;
  if (approvals === undefined) {
    if (policy === undefined) return undefined;
    throw new HarnessError(
      'NO_APPROVALS_PLUGIN',
      `--approve ${policy} needs the approvals plugin, which the config does not load; add { module: 'harness-runtime/plugins/approvals' } to its plugins (defaultPlugins() from 'harness-runtime/stack' includes it).`,
    );
  }
  return approvals.create(policy ?? approvals.defaultPolicy, ask ? { ask } : {});
}

/** `harness [--config …] [--data-dir …]`: how to run this CLI again with the same config and data. */
export function selfWithGlobals(globals: GlobalOptions): string {
  const store = globals.store ? ` --store ${shellQuote(isFileStoreSpec(globals.store) ? globals.store : redactStoreUrl(globals.store))}` : '';
  return `${selfCommand()}${globals.config ? ` --config ${shellQuote(globals.config)}` : ''}${globals.dataDir ? ` --data-dir ${shellQuote(globals.dataDir)}` : ''}${store}`;
}

/** `journal <path>` and `replay <command>` lines (the replay names the journal's file, see {@link sessionArgument}). */
export function sessionHints(session: { path: string }, dataDir: string, globals: GlobalOptions, io: Io): string {
  return [`${io.c.dim('journal')} ${session.path}`, `${io.c.dim('replay ')} ${selfWithGlobals(globals)} replay ${shellQuote(sessionArgument(session.path, dataDir))}`].join('\n');
}

/** A short title from a first prompt. */
export function titleOf(prompt: string): string {
  return oneLine(prompt, 60);
}

/**
 * The CLI's hint for an error code: the flag or command that does what the runtime's neutral
 * message describes (the rule in runtime/kernel/errors.ts). One line, or undefined.
 */
export function hintFor(error: HarnessError, context: { globals: GlobalOptions; dataDir?: string }): string | undefined {
  const self = selfWithGlobals(context.globals);
  const path = typeof error.failure.path === 'string' ? error.failure.path : undefined;
  const session = path && context.dataDir ? shellQuote(sessionArgument(path, context.dataDir)) : '<session>';
  const config = configSource(context.globals.config);
  switch (error.code) {
    case 'JOURNAL_CORRUPT':
      return `\`${self} replay ${session} --salvage\` reads past the damaged line; \`${self} replay ${session} --verify\` lists all the damage.`;
    case 'FORK_INSIDE_TURN':
      return 'add --close-turn to fork there anyway (the fork closes the open turn with synthetic events), or fork at a seq outside the turn.';
    case 'UNKNOWN_EVENT_TYPE':
      return `the session holds events of a plugin that the config ${configName(config)} does not load; \`${self} replay ${session}\` reads it without that plugin.`;
    case 'JOURNAL_LOCKED':
      return `another harness process is writing this session; \`${self} replay ${session}\` reads it meanwhile (read-only), or wait for it to finish.`;
    case 'JOURNAL_EXISTS':
      if (error.failure.verbatim === true) return `\`${self} sessions\` lists the sessions of that store; import into another with --store <url>.`;
      return 'give the new session another id with --id <id>.';
    case 'DUPLICATE_PLUGIN':
      return `the plugin is listed twice in the config ${configName(config)}; remove one of its entries.`;
    case 'INVALID_CONFIG':
    case 'CONFIG_NOT_FOUND':
    case 'PLUGIN_IMPORT_FAILED':
    case 'PLUGIN_SETUP_FAILED':
    case 'INVALID_PLUGIN':
      return `the config is ${configName(config)} (${config.from}); --config <path> or $HARNESS_CONFIG picks another.`;
    case 'DATA_DIR_INVALID':
      return "point --data-dir, $HARNESS_HOME or the config's dataDir at a directory (it is created when missing).";
    case 'JOURNAL_NOT_FOUND':
      return `\`${self} sessions\` lists the sessions${context.dataDir ? ` in ${context.dataDir}` : ''}; a journal can also be named by its path.`;
    case 'JOURNAL_HEADER':
    case 'NOT_A_JOURNAL_FILE':
      return `a session is named by its id (\`${self} sessions\` lists them) or by the path of its .jsonl journal.`;
    default:
      return undefined;
  }
}

/**
 * A message about the config names the config actually used, not "harness.config.ts" or "the
 * harness config" (INVALID_CONFIG, and UNKNOWN_MODEL's "add it … in harness.config.ts").
 */
export function withConfigPath(error: HarnessError, configPath: string | undefined): string {
  if (configPath === undefined) return error.message;
  if (error.code !== 'INVALID_CONFIG' && error.code !== 'UNKNOWN_MODEL') return error.message;
  return error.message.replace(/\bthe harness config\b|(?<![\w/.-])harness\.config\.ts\b/g, configPath);
}

/**
 * `file:line:col` of the syntax error (or the first stack frame in the file) behind a config or
 * plugin that failed to load, with the line's text: the error Node reports for a module's syntax
 * error has no location, so the file is parsed again with esbuild (tsx's own compiler) to find it.
 * First the location the runtime found (`failure.line`, `column`: a config key that does not validate,
 * a syntax error tsx's compiler reported). Columns are 1-based, in characters.
 */
export async function errorLocation(error: HarnessError, configPath: string | undefined): Promise<{ at: string; lineText?: string; column?: number } | undefined> {
  if (error.code !== 'INVALID_CONFIG' && error.code !== 'PLUGIN_IMPORT_FAILED') return undefined;
  const file = error.code === 'INVALID_CONFIG' ? configPath : typeof error.failure.path === 'string' ? error.failure.path : undefined;
  if (file === undefined || !existsSync(file)) return undefined;
  // Where the runtime located it: a syntax error tsx's compiler reported, or a schema issue's key the config writes exactly once.
  const { line, column } = error.failure;
  if (typeof line === 'number' && typeof column === 'number' && (error.code === 'INVALID_CONFIG' ? error.failure.configPath === file : error.failure.path === file)) {
    const lineText = readFileSync(file, 'utf8').split(/\r?\n/)[line - 1];
    return { at: `${file}:${line}:${column}`, ...(lineText === undefined ? {} : { lineText, column: column - 1 }) };
  }
  const cause = error.cause;
  // Node's SyntaxError (no location in it), or a TransformError the runtime did not locate.
  if (cause instanceof SyntaxError || (cause instanceof Error && (cause.name === 'SyntaxError' || cause.name === 'TransformError'))) {
    try {
      const tsxRequire = createRequire(createRequire(import.meta.url).resolve('tsx/package.json'));
      const esbuild = tsxRequire('esbuild') as { transform(code: string, options: Record<string, unknown>): Promise<unknown> };
      await esbuild.transform(readFileSync(file, 'utf8'), {
        loader: /\.[cm]?jsx?$/.test(file) ? 'js' : file.endsWith('.json') ? 'json' : 'ts',
        sourcefile: file,
        ...(file.endsWith('.json') ? {} : { format: 'esm' }),
      });
    } catch (transformError) {
      const location = (transformError as { errors?: { text: string; location?: { line: number; column: number; lineText: string } }[] }).errors?.[0]?.location;
      // esbuild's column is 0-based and in bytes: 1-based characters, as an editor counts.
      const at = location === undefined ? undefined : columnOfByteOffset(location.lineText, location.column);
      if (location && at !== undefined) return { at: `${file}:${location.line}:${at}`, lineText: location.lineText, column: at - 1 };
    }
  }
  if (cause instanceof Error && cause.stack) {
    const escaped = file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const frame = new RegExp(`${escaped}(?:\\?[^:)\\s]*)?:(\\d+):(\\d+)`).exec(cause.stack);
    if (frame) return { at: `${file}:${frame[1]}:${frame[2]}` };
  }
  return undefined;
}
