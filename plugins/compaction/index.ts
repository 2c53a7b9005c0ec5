/**
 * plugins/compaction — keeps a session inside its model's context window by summarising its older
 * turns.
 *
 * Triggers: on `agent/pre-step` when the context pressure reaches the model's context window minus
 * `reserveTokens` — the pressure is the larger of `ctx.tokenMeter`'s (if loaded; it includes what the
 * provider counted, system prompt and tools too) and an estimate of the entering messages (which
 * covers a session the meter joined late, e.g. a resumed one); a failed threshold attempt is not
 * repeated in the same turn. On `agent/request-error` with `CONTEXT_WINDOW_EXCEEDED` (then the call
 * is retried, once per step). On request: `ctx.compaction.compact(session, prepared)`.
 *
 * It cuts only at a turn boundary — before a user prompt — so a tool call and its result are never
 * split; the last `keepTurns` turns stay verbatim (the running turn counts as one; `keepTurns: 0`
 * summarises the whole surface). The summary is made through `ctx.llm.stream` with
 * `purpose: 'compaction'` and the same system prompt and tool definitions as the session's requests
 * (so a provider's prompt cache still hits). Journal: `compaction/start`, `compaction/summary`,
 * `surface/replace` (the summary replaces the cut messages), `compaction/end`. An empty summary, a
 * summary that calls tools, or a failed call is a failed attempt (`compaction/end{failed}`): the
 * original context stays. A compaction cut short by a crash is closed as failed by the journal's
 * repair when the session is opened.
 */
import {
  prefixSum,
  BlockAssembler,
  createPluginMessage,
  createUserMessage,
  definePlugin,
  llmFailure,
  messageText,
  z,
  type LlmFailure,
  type Message,
  type PreparedCall,
  type SessionHandle,
  type ToolSpec,
} from '../../runtime/index.ts';

export interface CompactionResult {
  readonly outcome: 'compacted' | 'failed' | 'skipped';
  readonly failure?: LlmFailure;
  /** Surface messages after compaction. */
  readonly messageCount: number;
}

export interface CompactionService {
  /** Compacts a session now (if it has turns older than the kept ones). */
  compact(session: SessionHandle, prepared: PreparedCall, options?: { tools?: readonly ToolSpec[]; system?: string; signal?: AbortSignal }): Promise<CompactionResult>;
}

declare global {
  namespace Harness {
    interface Services {
      compaction?: CompactionService;
    }
  }
}

const SUMMARY_INSTRUCTION = [
  'Summarise the conversation above for your own later use: it will replace the older messages.',
  "Keep every fact needed to continue the work: the user's goals and constraints, decisions made, files read or changed (with paths), commands run and their outcomes, open questions and next steps.",
  'Write plain prose and short lists. Do not call any tool.',
].join(' ');

/**
 * Without the token meter: characters of the messages' content as JSON, / 4. Summed per conversation
 * from where the last list's frozen prefix ended (`prefixSum`): this runs at every step, and a long
 * history read each time made turns slower as the session grew (issue 16).
 */
function jsonCharsEstimator(): (messages: readonly Message[]) => number {
  const chars = prefixSum((message) => JSON.stringify(message.content).length);
  return (messages) => Math.ceil(chars(messages) / 4);
}

/**
 * Index of the first message of the kept turns (a user prompt; `messages.length` for `keepTurns`
 * 0), or -1 when there is nothing older to cut.
 */
export function cutIndex(messages: readonly Message[], keepTurns: number): number {
  if (keepTurns <= 0) return messages.length > 0 ? messages.length : -1;
  const prompts: number[] = [];
  messages.forEach((message, index) => {
    if (message.role === 'user' && message.source.kind === 'user') prompts.push(index);
  });
  if (prompts.length <= keepTurns) return -1;
  const cut = prompts[prompts.length - keepTurns]!;
  return cut > 0 ? cut : -1;
}

export default definePlugin({
  name: 'compaction',
  config: z
    .strictObject({
      /** Tokens kept free below the context window; compaction starts when pressure crosses it. */
      reserveTokens: z.number().int().min(0).default(16_000),
      /** Most recent turns kept verbatim. */
      keepTurns: z.number().int().min(0).default(2),
      /** Compact automatically at the threshold (otherwise only on overflow or request). */
      auto: z.boolean().default(true),
    })
    .default({ reserveTokens: 16_000, keepTurns: 2, auto: true }),
  setup(ctx, config) {
    // By default a compaction on request summarises with what the session's requests were sent with.
    const compact: CompactionService['compact'] = async (session, prepared, options = {}) => {
      const header = session.state.header;
      const system = 'system' in options ? options.system : header?.system;
      return runCompaction(session, prepared, { ...options, tools: options.tools ?? header?.tools ?? [], ...(system === undefined ? {} : { system }) }, 'request');
    };

    /** Sessions with a compaction in progress in this generation (between its check and its compaction/start). */
    const running = new WeakSet<SessionHandle>();

    async function runCompaction(
      session: SessionHandle,
      prepared: PreparedCall,
      options: { tools?: readonly ToolSpec[]; system?: string; signal?: AbortSignal },
      trigger: 'threshold' | 'context-window-exceeded' | 'request',
    ): Promise<CompactionResult> {
      const messages = session.state.messages;
      // One compaction at a time per session: a second one would cut a surface that is about to change.
      if (session.state.compacting || running.has(session)) return { outcome: 'skipped', messageCount: messages.length };
      const cut = cutIndex(messages, config.keepTurns);
      if (cut < 0) return { outcome: 'skipped', messageCount: messages.length };
      running.add(session);
      try {
        return await summarise(session, prepared, options, trigger, messages, cut);
      } finally {
        running.delete(session);
      }
    }

    async function summarise(
      session: SessionHandle,
      prepared: PreparedCall,
      options: { tools?: readonly ToolSpec[]; system?: string; signal?: AbortSignal },
      trigger: 'threshold' | 'context-window-exceeded' | 'request',
      messages: readonly Message[],
      cut: number,
    ): Promise<CompactionResult> {
      await session.append('compaction/start', { trigger, messageCount: messages.length, estimatedTokens: estimate(messages) });
      const fail = async (failure: LlmFailure): Promise<CompactionResult> => {
        await session.append('compaction/end', { outcome: 'failed', failure });
        return { outcome: 'failed', failure, messageCount: session.state.messages.length };
      };
      const assembler = new BlockAssembler();
      try {
        for await (const chunk of ctx.llm.stream({
          ...prepared.config,
          messages: [...messages.slice(0, cut), createUserMessage(SUMMARY_INSTRUCTION)],
          ...(options.system === undefined ? {} : { system: options.system }),
          tools: options.tools ?? [],
          ...(options.signal ? { signal: options.signal } : {}),
          sessionId: session.id,
          purpose: 'compaction',
        })) {
          assembler.push(chunk);
        }
      } catch (error) {
        return fail(llmFailure('UNKNOWN', `The summary call failed: ${error instanceof Error ? error.message : String(error)}`));
      }
      const result = assembler.result();
      if (result.finish.kind === 'error' || result.finish.kind === 'aborted') return fail(result.finish.failure);
      if (result.content.some((block) => block.type === 'tool-call'))
        return fail(llmFailure('MALFORMED_RESPONSE', 'The summary reply called a tool instead of summarising; the context was left as it was.'));
      const summary = messageText({ content: result.content }).trim();
      if (summary === '') return fail(llmFailure('EMPTY_RESPONSE', 'The summary reply was empty; the context was left as it was.'));
      await session.append('compaction/summary', { summary, provider: prepared.config.provider, model: prepared.config.model, ...(result.usage ? { usage: result.usage } : {}) });
      const summaryMessage = createPluginMessage('compaction', `Summary of the earlier conversation (older messages were compacted):\n\n${summary}`, { form: 'recall' });
      await session.append('surface/replace', { start: 0, end: cut, messages: [summaryMessage] });
      await session.append('compaction/end', { outcome: 'compacted', keptMessageCount: messages.length - cut });
      return { outcome: 'compacted', messageCount: session.state.messages.length };
    }

    const fallback = jsonCharsEstimator();
    const estimate = (messages: readonly Message[]): number => ctx.tokenMeter?.estimateTokens(messages) ?? fallback(messages);

    /** The turn of each session's last failed threshold attempt: not repeated at every step of that turn. */
    const failedInTurn = new WeakMap<SessionHandle, number>();
    ctx.on('agent/pre-step', async (payload, next) => {
      if (config.auto && failedInTurn.get(payload.session) !== payload.turn) {
        const window = payload.prepared.model.contextWindow;
        if (window !== undefined) {
          const pressure = Math.max(ctx.tokenMeter?.session(payload.session.id).contextTokens ?? 0, estimate(payload.messages));
          if (pressure >= window - config.reserveTokens) {
            const result = await runCompaction(
              payload.session,
              payload.prepared,
              { tools: payload.tools, ...(payload.system === undefined ? {} : { system: payload.system }), signal: payload.signal },
              'threshold',
            );
            if (result.outcome === 'compacted') return next({ ...payload, messages: payload.session.state.messages });
            if (result.outcome === 'failed') failedInTurn.set(payload.session, payload.turn);
          }
        }
      }
      return next();
    });

    const retriedSteps = new WeakMap<SessionHandle, string>();
    ctx.on(
      'agent/request-error',
      async (payload, next) => {
        if (payload.failure.code !== 'CONTEXT_WINDOW_EXCEEDED') return next();
        const key = `${payload.turn}:${payload.step}`;
        if (retriedSteps.get(payload.session) === key) return next(); // compacted once for this step already
        retriedSteps.set(payload.session, key);
        const result = await runCompaction(
          payload.session,
          payload.prepared,
          { signal: payload.signal, tools: payload.session.state.header?.tools, system: payload.session.state.header?.system },
          'context-window-exceeded',
        );
        return result.outcome === 'compacted' ? { action: 'retry' } : next();
      },
      { stage: -10 },
    );

    ctx.provide('compaction', { compact });
  },
});
