/**
 * plugins/subagents — delegation to child sessions (seed 000 "Subagent 接口"; issue 20).
 *
 * Tools:
 * - `run_subagent { prompt, description?, model?, keep? }`: spawns a child session in the same
 *   workspace and store, with its own journal, runs one turn of it on `prompt`, and answers with the
 *   child's final reply. `keep: true` keeps the child for further prompts (a long-lived subagent).
 * - `input_subagent { subagentId, prompt, close? }`: one more turn of a kept child.
 *
 * What holds (each a test in test/subagents/):
 * - the child's header names its parent (`parentSession: { sessionId, callId, depth }`); the
 *   parent's journal records `subagent/spawn` (and `subagent/input`, `subagent/end`), ignorable
 *   plugin events that link the child's id;
 * - the child's events reach the parent's consumer marked with their `origin` (one hop per level);
 * - the child's model defaults to the parent's current one (`model` picks another:
 *   `provider/model`, or a model of the parent's provider);
 * - its tool calls go through the parent's approver, each exactly once, the request carrying
 *   `origin` (no approver: every call denied; a throwing approver: denied — the loop's own rules);
 * - aborting the parent turn aborts the child's (both journals end `aborted`), and the parent's
 *   `tool/result` is journaled only once the child's turn has ended;
 * - a spawn deeper than `maxDepth` (default 1: a subagent cannot spawn another) is a failed tool
 *   result, code `SUBAGENT_DEPTH_EXCEEDED`, that says so.
 * Usage roll-up: the child's `session/event` deliveries name their parent, so the token meter adds
 * them to the parent's totals; the CLI footer counts the forwarded `assistant/message` events.
 */
import {
  definePlugin,
  defineTool,
  HarnessError,
  messageText,
  registerEventType,
  z,
  type AgentSession,
  type ApproveFn,
  type ForwardedEvent,
  type PluginContext,
  type SessionHandle,
  type TokenUsage,
  type ToolContext,
  type TurnEndReason,
} from '../../runtime/index.ts';

/** `subagent/spawn` data: a child session was started by a tool call of this session. */
export interface SubagentSpawn {
  readonly turn: number;
  readonly step: number;
  readonly callId: string;
  readonly childSessionId: string;
  /** 1 for a child of a top-level session. */
  readonly depth: number;
  readonly provider: string;
  readonly model: string;
  readonly mode: 'one-shot' | 'long-lived';
  readonly description?: string;
}

/** `subagent/input` data: a kept child was given another prompt. */
export interface SubagentInput {
  readonly turn: number;
  readonly step: number;
  readonly callId: string;
  readonly childSessionId: string;
}

/** `subagent/end` data: a turn of a child ended (its `childTurn`, reason and usage). */
export interface SubagentEnd {
  readonly turn: number;
  readonly step: number;
  readonly callId: string;
  readonly childSessionId: string;
  readonly childTurn: number;
  readonly reason: TurnEndReason;
  readonly usage: TokenUsage;
  /** The child was closed (one-shot, or `input_subagent { close: true }`). */
  readonly closed: boolean;
}

declare global {
  namespace Harness {
    interface SessionEventMap {
      'subagent/spawn': SubagentSpawn;
      'subagent/input': SubagentInput;
      'subagent/end': SubagentEnd;
    }
  }
}

/** Seed 000 `SubagentHandle`: one child session. */
export interface SubagentHandle {
  /** The child session's id (the hop its events' `origin` carries). */
  readonly sessionId: string;
  /**
   * Runs one turn of the child on `prompt`; yields its events (and its own children's, marked).
   * @throws HarnessError `SUBAGENT_DISPOSED` after `dispose()`; `SESSION_BUSY` while a turn runs.
   */
  run(input: { prompt: string; signal?: AbortSignal; approve?: ApproveFn }): AsyncIterable<ForwardedEvent>;
  /** Closes the child's journal. Idempotent. */
  dispose(): Promise<void>;
}

/** Seed 000 `SubagentRunner`: spawns children of one session. */
export interface SubagentRunner {
  /**
   * @param input.agentId only the current agent (`undefined` or `'self'`) exists.
   * @param input.modelId `provider/model`, or a model of the parent's provider (default: the parent's model).
   * @throws HarnessError `SUBAGENT_DEPTH_EXCEEDED`, `UNKNOWN_AGENT`, `NO_DEFAULT_MODEL`.
   */
  spawn(input: { agentId?: string; modelId?: string; callId?: string }): Promise<SubagentHandle & { readonly provider: string; readonly model: string; readonly depth: number }>;
}

const configSchema = z
  .strictObject({
    /** Deepest nesting allowed: 1 lets a top-level session spawn children that cannot spawn their own. */
    maxDepth: z.number().int().min(0).default(1),
    /** Timeout of one `run_subagent` / `input_subagent` call, ms (the child's whole turn); 0 or less: none. */
    timeoutMs: z.number().int().default(600_000),
  })
  .default({ maxDepth: 1, timeoutMs: 600_000 });

/** A child's session id: `<parent>.sub<N>`, the first N free in the store. */
const childId = (parentId: string, n: number): string => `${parentId.slice(0, 190)}.sub${n}`;

/**
 * The runner of a session (seed 000: injected by the assembly layer — here the harness's
 * `ctx.sessions`). Children run in the parent's workspace and store.
 */
export function subagentRunner(ctx: Pick<PluginContext, 'sessions'>, parent: SessionHandle, options: { maxDepth: number; provider?: string; model?: string }): SubagentRunner {
  return {
    async spawn(input) {
      if (input.agentId !== undefined && input.agentId !== 'self') {
        throw new HarnessError('UNKNOWN_AGENT', `No agent "${input.agentId}": subagents run the current agent (leave agentId out).`);
      }
      const depth = (parent.header.parentSession?.depth ?? 0) + 1;
      if (depth > options.maxDepth) {
        throw new HarnessError(
          'SUBAGENT_DEPTH_EXCEEDED',
          options.maxDepth === 0
            ? 'Subagents are switched off here (the subagents plugin has maxDepth 0); do the task in this session.'
            : `A subagent at depth ${depth} would exceed the nesting limit of ${options.maxDepth}: this session is itself a subagent at depth ${depth - 1}. Do the task here instead (or raise maxDepth in the subagents plugin's config).`,
          { details: { depth, maxDepth: options.maxDepth } },
        );
      }
      const { provider, model } = pickModel(input.modelId, options.provider, options.model);
      let session: AgentSession | undefined;
      for (let n = 1; session === undefined; n++) {
        try {
          session = await ctx.sessions.create({ id: childId(parent.id, n), cwd: parent.cwd, parentSession: { sessionId: parent.id, ...(input.callId ? { callId: input.callId } : {}), depth } });
        } catch (error) {
          if (!(HarnessError.is(error) && error.code === 'JOURNAL_EXISTS')) throw error;
        }
      }
      const child = session;
      let disposed = false;
      return {
        sessionId: child.id,
        provider,
        model,
        depth,
        run({ prompt, signal, approve }) {
          if (disposed) throw new HarnessError('SUBAGENT_DISPOSED', `Subagent ${child.id} was closed; spawn a new one.`);
          // Inherited approvals: the parent's approver, asked with the child's hop in front of the origin.
          const inherited: ApproveFn | undefined = approve && ((request) => approve({ ...request, origin: [child.id, ...(request.origin ?? [])] }));
          return child.run(prompt, { ...(signal ? { signal } : {}), ...(inherited ? { approve: inherited } : {}), provider, model });
        },
        async dispose() {
          if (disposed) return;
          disposed = true;
          await child.close();
        },
      };
    },
  };
}

function pickModel(modelId: string | undefined, parentProvider: string | undefined, parentModel: string | undefined): { provider: string; model: string } {
  if (modelId !== undefined && modelId.includes('/')) {
    const slash = modelId.indexOf('/');
    return { provider: modelId.slice(0, slash), model: modelId.slice(slash + 1) };
  }
  if (parentProvider === undefined || parentModel === undefined) {
    throw new HarnessError('NO_DEFAULT_MODEL', 'The subagent has no model to inherit (the parent session has made no model call yet); name one as provider/model.');
  }
  return { provider: parentProvider, model: modelId ?? parentModel };
}

/**
 * The event types are process-wide (one registry), while each harness or reload may load its own
 * generation of this module: the count of users lives on `globalThis`, shared by every generation.
 */
const USERS = Symbol.for('harness.subagents.event-types');
function useEventTypes(ctx: Pick<PluginContext, 'onDispose'>): void {
  const global = globalThis as { [USERS]?: { count: number; dispose: (() => void)[] } };
  global[USERS] ??= { count: 0, dispose: [] };
  const users = global[USERS];
  if (users.count++ === 0) users.dispose = SUBAGENT_EVENT_TYPES.map((type) => registerEventType(type, { ignorable: true }));
  ctx.onDispose(() => {
    if (--users.count === 0) for (const dispose of users.dispose.splice(0)) dispose();
  });
}

/** The plugin's journal event types (all ignorable: a reader without the plugin skips them). */
export const SUBAGENT_EVENT_TYPES = ['subagent/spawn', 'subagent/input', 'subagent/end'] as const;

export default definePlugin({
  name: 'subagents',
  config: configSchema,
  setup(ctx, config) {
    useEventTypes(ctx);
    /** Kept (long-lived) children, by child session id, with the session that owns them. */
    const kept = new Map<string, { handle: SubagentHandle; parentId: string }>();
    /** Child turns still running, by `<parent>\0<callId>`: the parent's result waits for them (see `tools/execute` below). */
    const running = new Map<string, Promise<unknown>>();
    ctx.onDispose(async () => {
      for (const { handle } of kept.values()) await handle.dispose().catch(() => undefined);
      kept.clear();
    });

    /** Runs one child turn, forwarding its events; returns the final text, or throws on a failed turn. */
    const driveTurn = async (handle: SubagentHandle, prompt: string, context: ToolContext, close: boolean): Promise<{ text: string; end: SubagentEnd }> => {
      const session = context.session!;
      let text = '';
      let childTurn = 0;
      let reason: TurnEndReason = 'interrupted';
      let failure: { code: string; message: string } | undefined;
      const usage: Record<string, number> = {};
      try {
        try {
          for await (const event of handle.run({ prompt, signal: context.signal, ...(context.approve ? { approve: context.approve } : {}) })) {
            context.forward?.(event, handle.sessionId);
            if (event.origin !== undefined) continue;
            if (event.type === 'assistant/message') {
              if (!event.data.interrupted) text = messageText(event.data.message);
              for (const [key, value] of Object.entries(event.data.usage ?? {})) if (typeof value === 'number') usage[key] = (usage[key] ?? 0) + value;
            } else if (event.type === 'turn/end') {
              childTurn = event.data.turn;
              reason = event.data.reason;
              failure = event.data.failure;
            }
          }
        } finally {
          if (close) await handle.dispose();
        }
      } catch (error) {
        if (!context.signal.aborted) throw error;
      }
      const end: SubagentEnd = { turn: context.turn ?? 0, step: context.step ?? 0, callId: context.callId, childSessionId: handle.sessionId, childTurn, reason, usage, closed: close };
      await session.append('subagent/end', end, { ignorable: true });
      if (reason === 'aborted') throw new HarnessError('ABORTED', `Subagent ${handle.sessionId} was aborted.`);
      if (reason !== 'completed' && reason !== 'max-tokens') {
        throw new HarnessError(failure?.code ?? 'SUBAGENT_FAILED', `Subagent ${handle.sessionId}'s turn ended "${reason}"${failure ? `: ${failure.message}` : ''}.`);
      }
      return { text, end };
    };

    /** Runs a tool body, tracked so the parent's result waits for all of it (see `tools/execute` below). */
    const tracked = async <T>(context: ToolContext, body: () => Promise<T>): Promise<T> => {
      const key = `${context.sessionId}\u0000${context.callId}`;
      const work = body();
      running.set(
        key,
        work.catch(() => undefined),
      );
      try {
        return await work;
      } finally {
        running.delete(key);
      }
    };

    const requireSession = (context: { session?: SessionHandle }, tool: string): SessionHandle => {
      if (context.session === undefined) throw new HarnessError('SUBAGENT_NO_SESSION', `${tool} runs only inside a session's turn (it spawns a child of that session).`);
      return context.session;
    };

    ctx.tools.register(
      defineTool({
        name: 'run_subagent',
        description:
          'Delegates a self-contained task to a subagent: a fresh session in the same workspace, with the same tools, that sees only the prompt you give it. Returns its final reply. Set keep to true to send it more prompts later with input_subagent.',
        input: z.strictObject({
          prompt: z.string().min(1).describe('The whole task: the subagent sees nothing else of this conversation.'),
          description: z.string().optional().describe('A short label for the task.'),
          model: z.string().min(1).optional().describe('provider/model, or a model of the current provider (default: the current model).'),
          keep: z.boolean().optional().describe('Keep the subagent for more prompts (input_subagent).'),
        }),
        permission: 'read',
        timeoutMs: config.timeoutMs,
        execute: (input, context) =>
          tracked(context, async () => {
            const session = requireSession(context, 'run_subagent');
            const runner = subagentRunner(ctx, session, { maxDepth: config.maxDepth, ...(context.config ? { provider: context.config.provider, model: context.config.model } : {}) });
            const handle = await runner.spawn({ ...(input.model ? { modelId: input.model } : {}), callId: context.callId });
            const keep = input.keep === true;
            await session.append(
              'subagent/spawn',
              {
                turn: context.turn ?? 0,
                step: context.step ?? 0,
                callId: context.callId,
                childSessionId: handle.sessionId,
                depth: handle.depth,
                provider: handle.provider,
                model: handle.model,
                mode: keep ? 'long-lived' : 'one-shot',
                ...(input.description ? { description: input.description } : {}),
              },
              { ignorable: true },
            );
            if (keep) kept.set(handle.sessionId, { handle, parentId: session.id });
            const { text } = await driveTurn(handle, input.prompt, context, !keep);
            return keep ? `${text}\n\n[subagent ${handle.sessionId} is kept: send it more with input_subagent]` : text;
          }),
      }),
    );

    ctx.tools.register(
      defineTool({
        name: 'input_subagent',
        description: 'Sends another prompt to a subagent started with run_subagent { keep: true } and returns its reply. close: true ends it afterwards.',
        input: z.strictObject({
          subagentId: z.string().min(1).describe('The id run_subagent reported.'),
          prompt: z.string().min(1),
          close: z.boolean().optional().describe('Close the subagent after this reply.'),
        }),
        permission: 'read',
        timeoutMs: config.timeoutMs,
        execute: (input, context) =>
          tracked(context, async () => {
            const session = requireSession(context, 'input_subagent');
            const entry = kept.get(input.subagentId);
            if (entry === undefined || entry.parentId !== session.id) {
              const mine = [...kept].filter(([, e]) => e.parentId === session.id).map(([id]) => id);
              throw new HarnessError('UNKNOWN_SUBAGENT', `No kept subagent "${input.subagentId}" in this session. Kept: ${mine.join(', ') || 'none'} (start one with run_subagent and keep: true).`);
            }
            await session.append('subagent/input', { turn: context.turn ?? 0, step: context.step ?? 0, callId: context.callId, childSessionId: input.subagentId }, { ignorable: true });
            const close = input.close === true;
            if (close) kept.delete(input.subagentId);
            const { text } = await driveTurn(entry.handle, input.prompt, context, close);
            return text;
          }),
      }),
    );

    // The close-out answers an aborted call at once; the parent's tool/result (and so its turn end)
    // waits until the child's turn has ended too, so both journals are complete when the turn is.
    ctx.on('tools/execute', async (payload, next) => {
      const outcome = await next(payload);
      const pending = running.get(`${payload.session.id}\u0000${payload.callId}`);
      if (pending !== undefined) await pending;
      return outcome;
    });
  },
});
