/**
 * A harness for a test and one turn on it: `createTestHarness` (the scripted model as the default,
 * journals in a temporary folder) and `runTurn` (runs a turn and collects its events and answer).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createHarness,
  messageText,
  type AgentSession,
  type AnySessionEvent,
  type ApproveFn,
  type AssistantMessage,
  type Harness,
  type HarnessConfig,
  type PluginSpec,
  type RunInput,
  type RunOptions,
  type SessionEvent,
  type ToolDefinition,
  type TokenUsage,
} from '../runtime/index.ts';
import { scriptedModel, type ScriptedModelOptions, type TestScript } from './scripted.ts';

export interface TestHarnessOptions {
  /** The default model's script (see {@link scriptedModel}); omit it to bring your own model plugin and `defaults`. */
  readonly script?: TestScript;
  /** Options of the scripted model. */
  readonly scripted?: ScriptedModelOptions;
  /** Plugins loaded after the scripted model: `{ plugin: myPlugin, config }` or `{ module: './x.ts' }`. */
  readonly plugins?: readonly PluginSpec[];
  /** Tools registered on the harness directly (without a plugin). */
  readonly tools?: readonly ToolDefinition[];
  /** Call defaults; with a script, default `{ provider: 'scripted', model: 'test' }`. */
  readonly defaults?: HarnessConfig['defaults'];
  /** Folder that relative plugin module paths resolve from. Default: the process's working directory. */
  readonly baseDir?: string;
}

/** A harness whose journals live in a temporary folder, removed by `dispose()`. */
export interface TestHarness extends Harness {
  /** The temporary folder: `data/` holds the journals, `workspace/` is the sessions' default cwd. */
  readonly dir: string;
  readonly workspace: string;
}

/**
 * Builds a harness for a test: the scripted model (when `script` is given) as the default model,
 * then `plugins`, journals under a fresh temporary folder.
 * @throws HarnessError as `createHarness` (a plugin that fails to load or set up, `INVALID_CONFIG`, …).
 */
export async function createTestHarness(options: TestHarnessOptions = {}): Promise<TestHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'harness-test-'));
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace);
  const scripted = options.script === undefined ? [] : [scriptedModel(options.script, options.scripted)];
  const defaults = options.defaults ?? (options.script === undefined ? undefined : { provider: options.scripted?.provider ?? 'scripted', model: options.scripted?.model ?? 'test' });
  let harness: Harness;
  try {
    harness = await createHarness({
      dataDir: join(dir, 'data'),
      ...(options.baseDir ? { baseDir: options.baseDir } : {}),
      config: { ...(defaults ? { defaults } : {}), plugins: [...scripted, ...(options.plugins ?? [])] },
    });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  for (const tool of options.tools ?? []) harness.ctx.tools.register(tool);
  const dispose = harness.dispose.bind(harness);
  const create = harness.createSession.bind(harness);
  const createSession: Harness['createSession'] = (sessionOptions = {}) => create({ cwd: workspace, ...sessionOptions });
  return Object.assign(harness, {
    dir,
    workspace,
    createSession,
    async dispose() {
      try {
        await dispose();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  });
}

/**
 * What one turn did, as {@link runTurn} records it. Unlike `TurnResult` (what `session.prompt()`
 * returns, and throws instead of returning for a failed turn), a record is made for every turn, failed
 * or aborted ones too, and keeps all of the turn's events for assertions.
 */
export interface TurnRecord {
  /** Every event of the turn, in journal order. */
  readonly events: readonly AnySessionEvent[];
  /** The text blocks of the turn's last assistant message, concatenated ('' when it had none): `TurnResult.text`. */
  readonly text: string;
  /** The turn's last assistant message, if any. */
  readonly message?: AssistantMessage;
  /** How the turn ended (`reason`: completed, aborted, error, max-tokens; `failure` on error). */
  readonly end: SessionEvent<'turn/end'>['data'];
  /** The tool calls the model made, with their arguments (JSON text), in order. */
  readonly toolCalls: readonly { readonly name: string; readonly arguments: string }[];
  /** The usage of the turn's model calls, summed. */
  readonly usage: TokenUsage;
  /** The session the turn ran in (still open: run another turn on it, or close it). */
  readonly session: AgentSession;
}

/** Allows every tool call: the default approver of {@link runTurn}. */
export const allowAll: ApproveFn = () => 'allow';

/**
 * Runs one turn and collects it. Given a harness, it runs in a new session (closed when the harness
 * is disposed); given a session, it continues it. Tool calls are allowed unless `options.approve`
 * says otherwise.
 * @throws HarnessError `SESSION_BUSY`; a turn that fails is NOT thrown: see `end.reason` / `end.failure`.
 */
export async function runTurn(target: Harness | AgentSession, input: RunInput, options: RunOptions = {}): Promise<TurnRecord> {
  const session = 'createSession' in target ? await target.createSession() : target;
  const events: AnySessionEvent[] = [];
  for await (const event of session.run(input, { approve: allowAll, ...options })) events.push(event);
  let message: AssistantMessage | undefined;
  let end: SessionEvent<'turn/end'>['data'] | undefined;
  const toolCalls: { name: string; arguments: string }[] = [];
  const usage: Record<string, number> = {};
  for (const event of events) {
    if (event.type === 'assistant/message') {
      const data = event.data as SessionEvent<'assistant/message'>['data'];
      message = data.message;
      for (const [key, value] of Object.entries(data.usage ?? {})) if (typeof value === 'number') usage[key] = (usage[key] ?? 0) + value;
    } else if (event.type === 'tool/call') {
      const data = event.data as SessionEvent<'tool/call'>['data'];
      toolCalls.push({ name: data.name, arguments: data.arguments });
    } else if (event.type === 'turn/end') end = event.data as SessionEvent<'turn/end'>['data'];
  }
  if (end === undefined) throw new Error('runTurn: the turn yielded no turn/end event');
  return { events, text: message ? messageText(message) : '', ...(message ? { message } : {}), end, toolCalls, usage: usage as TokenUsage, session };
}
