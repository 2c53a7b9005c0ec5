/**
 * What the commands share: opening the harness from the config, picking the model of a run,
 * approvals, and session hints.
 */
import { createHarness, HarnessError, type AgentSession, type ApprovalRequest, type ApproveFn, type Harness } from '../index.ts';
import { resolveConfigPath, selfCommand, shellQuote, type Io } from './env.ts';
import { oneLine } from './format.ts';

/** Options every command takes. */
export interface GlobalOptions {
  readonly config?: string;
  readonly dataDir?: string;
  readonly debug?: boolean;
}

/** Builds the harness a command works with; diagnostics go to stderr (info only with --debug). */
export async function openHarness(globals: GlobalOptions, io: Io): Promise<Harness> {
  const harness = await createHarness({ configPath: resolveConfigPath(globals.config), ...(globals.dataDir ? { dataDir: globals.dataDir } : {}) });
  harness.kernel.bus.add(
    'kernel/diagnostic',
    (diagnostic: { level: string; code: string; message: string }) => {
      if (diagnostic.level === 'info' && !globals.debug) return;
      const colour = diagnostic.level === 'error' ? io.c.red : diagnostic.level === 'warning' ? io.c.yellow : io.c.dim;
      io.err.write(`${colour(`${diagnostic.level} ${diagnostic.code}:`)} ${globals.debug ? diagnostic.message : oneLine(diagnostic.message, 300)}\n`);
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
    if (!HarnessError.is(error)) throw error;
    io.err.write(`${io.c.yellow(`warning ${error.code}:`)} ${oneLine(error.message, 240)} — reading without the config's plugins\n`);
    return createHarness({ config: { plugins: [] }, ...(globals.dataDir ? { dataDir: globals.dataDir } : {}) });
  }
}

/** Options of the commands that run turns (`run`, `chat`, `dev`). */
export interface TurnOptions {
  readonly provider?: string;
  readonly model?: string;
  readonly approve?: string;
  readonly cwd?: string;
  readonly resume?: string;
  readonly reasoningEffort?: string;
}

/**
 * The provider and model a run asks for, or nothing to keep the session's (its last request header,
 * else the config's defaults). `--provider` without `--model` takes the config's default model when
 * the provider is the default one, else the provider's first listed model. The call is prepared once
 * here, so an unknown provider, model or reasoning effort fails before anything is journaled.
 * @throws HarnessError `NO_ADAPTER`, `UNKNOWN_MODEL`, `UNSUPPORTED_REASONING_EFFORT`, `NO_MODELS`.
 */
export async function resolveCall(harness: Harness, options: TurnOptions, session?: AgentSession): Promise<{ provider?: string; model?: string }> {
  const defaults = harness.config.defaults ?? { provider: 'scripted', model: 'scripted-default' };
  const last = session?.state.header?.config;
  let provider = options.provider;
  let model = options.model;
  if (provider !== undefined && model === undefined) {
    if (provider === last?.provider) model = last.model;
    else if (provider === defaults.provider) model = defaults.model;
    else {
      const models = await harness.llm.listModels(provider);
      if (models.length === 0) throw new HarnessError('NO_MODELS', `Provider "${provider}" lists no models; name one with --model.`);
      model = models[0]!.id;
    }
  }
  const effective = { provider: provider ?? last?.provider ?? defaults.provider, model: model ?? (provider === undefined ? last?.model : undefined) ?? defaults.model };
  const reasoningEffort = options.reasoningEffort ?? defaults.reasoningEffort;
  await harness.llm.prepareCall({ ...effective, ...(reasoningEffort ? { reasoningEffort } : {}) });
  if (provider === undefined && model === undefined) return {};
  return { provider: effective.provider, model: effective.model };
}

export const POLICIES = ['allow-all', 'read-only', 'always-ask', 'deny-all'] as const;

/** Asks a person about one tool call; undefined when there is no one to ask. */
export type Ask = (request: ApprovalRequest) => Promise<boolean>;

/**
 * The approver for `--approve <policy>`: from the approvals plugin (`ctx.approvals`) when it is
 * loaded, else the same four policies built in here.
 * @throws HarnessError `UNKNOWN_POLICY`.
 */
export function makeApprover(harness: Harness, policy: string | undefined, ask: Ask | undefined): ApproveFn {
  const approvals = harness.ctx.approvals;
  const name = policy ?? approvals?.defaultPolicy ?? 'read-only';
  if (approvals !== undefined) return approvals.create(name, ask ? { ask } : {});
  if (!(POLICIES as readonly string[]).includes(name)) throw new HarnessError('UNKNOWN_POLICY', `No approval policy "${name}". Use one of: ${POLICIES.join(', ')}.`);
  const by = `policy:${name}`;
  const asked = async (request: ApprovalRequest, why: string) => {
    if (ask === undefined) return { decision: 'deny' as const, decidedBy: by, reason: `${why}, and there is no one to ask` };
    return (await ask(request)) ? { decision: 'allow' as const, decidedBy: 'user' } : { decision: 'deny' as const, decidedBy: 'user', reason: 'the user said no' };
  };
  return (request) => {
    if (name === 'allow-all') return { decision: 'allow', decidedBy: by };
    if (name === 'deny-all') return { decision: 'deny', decidedBy: by, reason: 'the deny-all policy runs no tools' };
    if (name === 'read-only' && request.permission === 'read') return { decision: 'allow', decidedBy: by };
    return asked(request, name === 'read-only' ? `${request.name} can change the workspace` : "every call needs a person's yes");
  };
}

/** The y/n question for a tool call. */
export function approvalQuestion(request: ApprovalRequest, io: Io): string {
  return `${io.c.yellow('?')} allow ${io.c.bold(request.name)} ${io.c.dim(`(${request.permission})`)}? [y/N] `;
}

export function isYes(answer: string): boolean {
  return /^\s*y(es)?\s*$/i.test(answer);
}

/** `journal <path>` and `replay <command>` lines. */
export function sessionHints(session: { id: string; path: string }, globals: GlobalOptions, io: Io): string {
  const dataDir = globals.dataDir ? ` --data-dir ${shellQuote(globals.dataDir)}` : '';
  const config = globals.config ? ` --config ${shellQuote(globals.config)}` : '';
  return [`${io.c.dim('journal')} ${session.path}`, `${io.c.dim('replay ')} ${selfCommand()}${config}${dataDir} replay ${session.id}`].join('\n');
}

/** A short title from a first prompt. */
export function titleOf(prompt: string): string {
  return oneLine(prompt, 60);
}
