/**
 * The turn API (seed 000 "Human 边界": a server connects requests and an event channel to
 * `session.run`; DESIGN "Serving"). What `harness serve` exposes over HTTP, usable in-process by an
 * embedder: create and list sessions, read events and state at a seq, submit a turn (it returns at
 * once with the turn's number and first seq), abort it, answer its approvals, and tail a session's
 * events live.
 *
 * A session is opened for writing (its writer lease: the journal's lock) for the length of one turn
 * and closed when the turn ends, so between turns another process may take it.
 *
 * Sessions live in the harness's store (`harness.store`: the file store, or any store a plugin
 * registered, e.g. PostgreSQL). Every read goes through it, and a live tail follows the store's
 * own tail, so a client of one server sees the turns another server (a worker) runs. A store that
 * cannot serve — no writer lease or no live tail — is refused (`STORE_UNSUPPORTED`).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  FileJournalStore,
  HarnessError,
  listSessions,
  openSession,
  readJournal,
  registerEventType,
  stateAt,
  storeSource,
  type AgentSession,
  type AnySessionEvent,
  type ApprovalAnswer,
  type ApprovalRequest,
  type ApproveFn,
  type Harness,
  type JournalLine,
  type JournalStore,
  type LineSource,
  type SessionEvent,
  type SessionState,
  type SessionSummary,
  type SessionWrittenBatch,
  type TokenUsage,
  type TraceContext,
} from '../../runtime/index.ts';
import { alreadyDecided, ApprovalDesk, type ApprovalReply, type PendingApproval } from './approvals.ts';
import { EventQueue, SessionTails } from './tail.ts';

declare global {
  namespace Harness {
    interface SessionEventMap {
      /** A served turn asks a person about a tool call (answered by `approval/decided`). Ignorable. */
      'approval/requested': {
        readonly turn: number;
        readonly step: number;
        readonly callId: string;
        readonly name: string;
        readonly permission: 'read' | 'write';
        /** When the call is denied unanswered (absolute ms). */
        readonly deadlineAtMs: number;
      };
      /**
       * A queued turn's job (or an idempotency key's submit) starts here (its turn follows): a job
       * is never run twice. `requestDigest`: the SHA-256 (hex) of the turn's request (prompt,
       * provider, model, reasoning effort, policy; not the trace context), so the key sent again
       * with another request is told apart (`IDEMPOTENCY_KEY_REUSED`) without journaling the
       * prompt a second time. Ignorable.
       */
      'serve/turn-job': { readonly jobId: string; readonly requestDigest?: string };
    }
  }
}

/** What the token-meter plugin provides (`ctx.tokenMeter`), as far as the server uses it. */
interface PriceService {
  cost(provider: string, model: string, usage: TokenUsage): number | undefined;
}

/** What a session's model calls cost at the token meter's prices. */
export interface SessionCost {
  /** USD over the calls that had a price. */
  readonly costUsd: number;
  /** USD per turn number (a compaction between turns counts in the turn after it). */
  readonly turnCostUsd: Readonly<Record<string, number>>;
  /** Calls with usage that had a price, and all calls with usage. */
  readonly pricedCallCount: number;
  readonly callCount: number;
}

/** What the approvals plugin provides (`ctx.approvals`), as far as the server uses it. */
interface PolicyService {
  readonly defaultPolicy: string;
  create(policy?: string, options?: { ask?: (request: ApprovalRequest) => boolean | { allow: boolean; reason?: string } | Promise<boolean | { allow: boolean; reason?: string }> }): ApproveFn;
}

export interface TurnServiceOptions {
  /** An unanswered approval is denied after this long, ms. Default 300 000 (5 min). */
  readonly approvalTimeoutMs?: number;
  /**
   * The approval policy of a turn that names none: a policy of the approvals plugin (`read-only`,
   * `always-ask`, `allow-all`, `deny-all`); default the plugin's default. Calls the policy asks
   * about wait for an answer over the API. Without the approvals plugin every call is asked.
   */
  readonly approvalPolicy?: string;
  /** The workspace of a session created without one. Default the process's cwd. */
  readonly cwd?: string;
  /** Steps per turn (default the runtime's, 100). */
  readonly maxSteps?: number;
}

/** A turn to run. */
export interface TurnInput {
  readonly prompt: string;
  readonly provider?: string;
  readonly model?: string;
  readonly reasoningEffort?: string;
  /** The approval policy for this turn (see {@link TurnServiceOptions.approvalPolicy}). */
  readonly approve?: string;
  /** The W3C trace context of the request (`traceparent` / `tracestate` headers): the turn's parent span, journaled on its `turn/start`. */
  readonly trace?: TraceContext;
}

/** A submitted turn: watch the events after `startSeq - 1` until its `turn/end`. */
export interface SubmittedTurn {
  readonly sessionId: string;
  readonly turn: number;
  /** Seq of its `turn/start`. */
  readonly startSeq: number;
  /** True when an earlier submit with the same idempotency key started this turn (nothing new started). */
  readonly replayed?: boolean;
}

/** A turn running in a session (see {@link TurnService.runningTurns}). */
export interface RunningTurn {
  readonly turn: number;
  /** Seq of its `turn/start`. */
  readonly startSeq: number;
  /** True when this server runs it; false when another process writing to the store does. */
  readonly runsHere: boolean;
}

/** One session, as `getSession` describes it. */
export interface SessionInfo {
  readonly id: string;
  readonly createdAtMs: number;
  readonly cwd?: string;
  readonly title?: string;
  readonly turnCount: number;
  /** Seq of the last event. */
  readonly lastSeq: number;
  readonly usage: SessionState['usage'];
  readonly lastTurnEnd?: SessionState['lastTurnEnd'];
  /** The turn running in the session, on this server or on any other writing to the store, if any. */
  readonly runningTurn?: RunningTurn;
  /** The approvals this server's turn waits for. */
  readonly pendingApprovals: readonly PendingApproval[];
  readonly parent?: { readonly sessionId: string; readonly seq: number };
}

interface Running {
  readonly controller: AbortController;
  /** The job (or idempotency key's marker) the turn runs for. */
  readonly jobId?: string;
  /** The digest of the request an idempotency key's turn runs ({@link requestDigestOf}). */
  readonly requestDigest?: string;
  session?: AgentSession;
  turn?: number;
  startSeq?: number;
  /** Resolves with the turn's `turn/end` (undefined if the run failed to start). */
  readonly done: Promise<SessionEvent<'turn/end'> | undefined>;
}

let eventTypeUsers = 0;
let disposeEventTypes: (() => void)[] = [];

/** The server's event types are registered while at least one turn service lives. */
function useEventTypes(): () => void {
  if (eventTypeUsers++ === 0) disposeEventTypes = [registerEventType('approval/requested', { ignorable: true }), registerEventType('serve/turn-job', { ignorable: true })];
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--eventTypeUsers === 0) for (const dispose of disposeEventTypes.splice(0)) dispose();
  };
}

/** The turn API over one harness (see the module comment). */
export class TurnService {
  readonly harness: Harness;
  private readonly options: TurnServiceOptions;
  private readonly approvalTimeoutMs: number;
  private readonly desk = new ApprovalDesk();
  /** One live tail per session, shared by its streams (see {@link events}). */
  private readonly tails: SessionTails;
  private readonly running = new Map<string, Running>();
  private readonly disposers: (() => void)[] = [];
  private closed = false;

  constructor(harness: Harness, options: TurnServiceOptions = {}) {
    checkServable(harness.store);
    this.harness = harness;
    this.options = options;
    this.approvalTimeoutMs = options.approvalTimeoutMs ?? 300_000;
    this.disposers.push(useEventTypes());
    const store = harness.store;
    this.tails = new SessionTails({
      tail: (id, afterSeq, signal) => readJournal(tailSource(store, id, afterSeq, signal)),
      read: (id, afterSeq) => readJournal(storeSource(store, id, { fromSeq: afterSeq + 1 })),
      // A session the store does not hold just ends its streams (see events); anything else is worth a warning.
      failed: (id, error) => {
        if (HarnessError.is(error) && error.code === 'JOURNAL_NOT_FOUND') return;
        harness.kernel.bus.report({
          level: 'warning',
          code: 'SERVE_TAIL_FAILED',
          message: `Session ${id}: following the store failed (${error instanceof Error ? error.message : String(error)}); its streams were closed, and clients reconnect with Last-Event-ID.`,
          source: 'serve',
        });
      },
    });
    // Written batches, not appended events: a stream never shows what a crash could still lose.
    harness.kernel.bus.declare('session/written', 'emit');
    this.disposers.push(harness.kernel.bus.add('session/written', (batch: SessionWrittenBatch) => this.tails.dispatch(batch.sessionId, batch.events), { owner: 'serve' }));
  }

  /**
   * Starts a session (a new journal). The journal is closed again at once: turns open it.
   * @throws HarnessError `JOURNAL_EXISTS` (id taken), `INVALID_SESSION_ID`, `WORKSPACE_NOT_FOUND`.
   */
  async createSession(input: { id?: string; cwd?: string; title?: string } = {}): Promise<SessionInfo> {
    this.assertOpen();
    const session = await this.harness.createSession({ cwd: input.cwd ?? this.options.cwd ?? process.cwd(), ...(input.id ? { id: input.id } : {}) });
    try {
      if (input.title) await session.session.append('session/title', { title: input.title });
    } finally {
      await session.close();
    }
    return this.getSession(session.id);
  }

  /** Every session in the store, most recently updated first. */
  listSessions(): Promise<SessionSummary[]> {
    return listSessions(this.harness.store);
  }

  /** @throws HarnessError `SESSION_NOT_FOUND`, `INVALID_SESSION_ID`, or a journal read error. */
  async getSession(sessionId: string): Promise<SessionInfo> {
    const id = await this.idOf(sessionId);
    await this.flushRunning(sessionId);
    const opened = await openSession(id, { store: this.harness.store });
    const { state, header } = opened;
    const own = this.runningTurnOf(sessionId);
    const running = own !== undefined ? { ...own, runsHere: true } : state.openTurn === undefined ? undefined : await this.storedRunningTurn(id, state.openTurn.turn);
    return {
      id: header.id,
      createdAtMs: header.createdAtMs,
      ...(header.cwd ? { cwd: header.cwd } : {}),
      ...(state.title ? { title: state.title } : {}),
      turnCount: state.turnCount,
      lastSeq: opened.lastSeq,
      usage: state.usage,
      ...(state.lastTurnEnd ? { lastTurnEnd: state.lastTurnEnd } : {}),
      ...(running !== undefined ? { runningTurn: running } : {}),
      pendingApprovals: this.desk.pendingIn(sessionId),
      ...(header.parent ? { parent: header.parent } : {}),
    };
  }

  /**
   * The events with `after < seq <= to`, at most `limit` of them (default 1000), in seq order.
   * @throws HarnessError `SESSION_NOT_FOUND`, `INVALID_SESSION_ID`.
   */
  async readEvents(sessionId: string, range: { after?: number; to?: number; limit?: number } = {}): Promise<{ events: AnySessionEvent[]; more: boolean }> {
    const id = await this.idOf(sessionId);
    const after = range.after ?? 0;
    const to = range.to ?? Number.MAX_SAFE_INTEGER;
    const limit = range.limit ?? 1000;
    await this.flushRunning(sessionId);
    const events: AnySessionEvent[] = [];
    let more = false;
    for await (const event of readJournal(storeSource(this.harness.store, id, { fromSeq: after + 1, ...(range.to !== undefined ? { toSeq: to } : {}) }))) {
      if (event.seq <= after) continue;
      if (event.seq > to) break;
      if (events.length === limit) {
        more = true;
        break;
      }
      events.push(event);
    }
    return { events, more };
  }

  /**
   * The state after the event `seq` (default: the last).
   * @throws HarnessError `SESSION_NOT_FOUND`, `SEQ_OUT_OF_RANGE` (past the last event).
   */
  async stateAt(sessionId: string, seq?: number): Promise<{ seq: number; state: SessionState }> {
    const id = await this.idOf(sessionId);
    await this.flushRunning(sessionId);
    const events: AnySessionEvent[] = [];
    for await (const event of readJournal(this.source(id))) {
      if (seq !== undefined && event.seq > seq) break;
      events.push(event);
    }
    const last = events.at(-1)?.seq ?? 0;
    if (seq !== undefined && seq > last) {
      throw new HarnessError('SEQ_OUT_OF_RANGE', `Session ${sessionId} has ${last} events; there is no state at seq ${seq}.`, { details: { sessionId, seq, lastSeq: last } });
    }
    return { seq: seq ?? last, state: { ...stateAt(events, last), sessionId } };
  }

  /**
   * Starts a turn and returns once its `turn/start` is journaled; the turn runs on. Its events are
   * on {@link events}; {@link turnEnd} resolves with its `turn/end`.
   * @throws HarnessError `EMPTY_PROMPT` (400), `UNKNOWN_PROVIDER` (400), `UNKNOWN_POLICY` (400), `SESSION_NOT_FOUND` (404),
   *   `SESSION_BUSY` (409: this server runs a turn in it), `JOURNAL_LOCKED` (409: another process
   *   writes it), `WORKSPACE_NOT_FOUND`.
   */
  async submitTurn(sessionId: string, input: TurnInput, options: { idempotencyKey?: string } = {}): Promise<SubmittedTurn> {
    // A key is journaled like a job's id (`serve/turn-job`): submitted again, the same key finds
    // the turn it started, here or in the journal (after a restart), and starts nothing.
    const started = await this.start(sessionId, input, options.idempotencyKey === undefined ? undefined : `key:${options.idempotencyKey}`);
    return started.replayed ? { ...started.turn, replayed: true } : started.turn;
  }

  /**
   * Runs a queued turn's job (see `TurnQueue`) to its end, once: the job's id is journaled before its
   * turn starts, so a job run again (its worker was killed, or its completion was lost) finds it and
   * does not start the turn a second time — the opening of the session has then closed the turn the
   * dead worker left (`interrupted`).
   * @returns `ran` with the turn's end, or `already-started`.
   * @throws like {@link submitTurn}; `JOURNAL_LOCKED` / `SESSION_BUSY` mean "try again later".
   */
  async runJob(sessionId: string, jobId: string, input: TurnInput): Promise<{ readonly outcome: 'ran'; readonly end: SessionEvent<'turn/end'> | undefined } | { readonly outcome: 'already-started' }> {
    const started = await this.start(sessionId, input, jobId);
    if (started.replayed) return { outcome: 'already-started' };
    return { outcome: 'ran', end: await this.turnEnd(sessionId, started.turn.turn) };
  }

  /** Starts a turn, or (`replayed`) finds the one job `jobId` started already. */
  private async start(sessionId: string, input: TurnInput, jobId?: string): Promise<{ turn: SubmittedTurn; replayed: boolean }> {
    this.assertOpen();
    this.checkTurnInput(input);
    // An idempotency key's submit journals its request's digest with the key: the key sent again
    // with another request is a conflict, as on the queue (which compares the queued input).
    const requestDigest = jobId?.startsWith('key:') ? requestDigestOf(input) : undefined;
    const runningFor = (): { turn: SubmittedTurn; replayed: boolean } | undefined => {
      const running = this.running.get(sessionId);
      if (running === undefined) return undefined;
      // An idempotent submit finds its running turn; a job taken again while its turn runs here
      // (expired meanwhile) waits instead: its worker is alive and completes it.
      if (requestDigest !== undefined && running.jobId === jobId) {
        if (running.requestDigest !== requestDigest) throw keyReused(sessionId);
        if (running.turn !== undefined) return { turn: { sessionId, turn: running.turn, startSeq: running.startSeq! }, replayed: true };
      }
      throw busy(sessionId, running.turn);
    };
    const before = runningFor();
    if (before !== undefined) return before;
    const id = await this.idOf(sessionId);
    const after = runningFor();
    if (after !== undefined) return after;
    const policy = this.policyService();
    const policyName = input.approve ?? this.options.approvalPolicy;
    const controller = new AbortController();
    // Made before the session opens, so a policy unknown to the approvals plugin fails first.
    const approve = this.approverFor(sessionId, policy, policyName, controller.signal);
    let settleDone!: (end: SessionEvent<'turn/end'> | undefined) => void;
    const running: Running = {
      controller,
      ...(jobId === undefined ? {} : { jobId }),
      ...(requestDigest === undefined ? {} : { requestDigest }),
      done: new Promise((resolve) => (settleDone = resolve)),
    };
    this.running.set(sessionId, running); // reserved before the first await: one turn per session
    let iterator: AsyncIterator<AnySessionEvent>;
    let first: IteratorResult<AnySessionEvent>;
    try {
      const { session } = await this.harness.openSession(id, this.options.maxSteps ? { maxSteps: this.options.maxSteps } : {});
      running.session = session;
      try {
        if (jobId !== undefined) {
          await session.session.checkpoint();
          const job = await this.jobState(id, jobId);
          // A marker written before digests were journaled matches any request.
          if (requestDigest !== undefined && job.state !== 'none' && job.requestDigest !== undefined && job.requestDigest !== requestDigest) throw keyReused(sessionId);
          if (job.state === 'started') {
            await session.close();
            this.running.delete(sessionId);
            settleDone(undefined);
            return { turn: { sessionId, turn: job.turn, startSeq: job.startSeq }, replayed: true };
          }
          if (job.state === 'none') await session.session.append('serve/turn-job', { jobId, ...(requestDigest === undefined ? {} : { requestDigest }) });
        }
        if (session.state.turnCount === 0 && session.state.title === undefined) await session.session.append('session/title', { title: titleOf(input.prompt) });
        iterator = session
          .run(input.prompt, {
            signal: controller.signal,
            approve,
            ...(input.provider ? { provider: input.provider } : {}),
            ...(input.model ? { model: input.model } : {}),
            ...(input.reasoningEffort ? { reasoningEffort: input.reasoningEffort } : {}),
            ...(input.trace ? { trace: input.trace } : {}),
          })
          [Symbol.asyncIterator]();
        first = await iterator.next();
      } catch (error) {
        await session.close().catch(() => undefined);
        throw error;
      }
    } catch (error) {
      this.running.delete(sessionId);
      settleDone(undefined);
      throw error;
    }
    const start = first.value as SessionEvent<'turn/start'>;
    running.turn = start.data.turn;
    running.startSeq = start.seq;
    void this.finishTurn(sessionId, running, iterator, settleDone);
    return { turn: { sessionId, turn: start.data.turn, startSeq: start.seq }, replayed: false };
  }

  /**
   * Checks what can be checked of a turn before anything is journaled: a prompt, and a provider
   * this harness has a route for (a model alone is left to the session's last call and the config's
   * defaults, as a run resolves it). Every worker of a queue loads the same config, so this
   * process's routes answer for all of them.
   * @throws HarnessError `EMPTY_PROMPT`, `UNKNOWN_PROVIDER` (naming the provider and the known ones).
   */
  checkTurnInput(input: TurnInput): void {
    if (typeof input.prompt !== 'string' || input.prompt.trim() === '') throw new HarnessError('EMPTY_PROMPT', 'The prompt is empty; say what the agent should do.');
    const { provider } = input;
    if (provider === undefined || this.harness.ctx.llm.hasRoute(provider)) return;
    const known = [...new Set(this.harness.ctx.llm.routes().map((route) => route.provider))];
    throw new HarnessError(
      'UNKNOWN_PROVIDER',
      `No adapter serves provider ${JSON.stringify(provider)}. ${known.length > 0 ? `Known providers: ${known.join(', ')}.` : "No provider is registered: the server's config loads no model plugin."} Leave provider out to use the session's or the config's default.`,
      { details: { provider, known } },
    );
  }

  /**
   * The `turn/end` of turn `turn` (default: the running one, else the last one), once it is
   * journaled; undefined when the session has no such turn.
   * @throws HarnessError `SESSION_NOT_FOUND`.
   */
  async turnEnd(sessionId: string, turn?: number): Promise<SessionEvent<'turn/end'> | undefined> {
    const id = await this.idOf(sessionId);
    const running = this.running.get(sessionId);
    if (running !== undefined && (turn === undefined || running.turn === turn)) {
      const end = await running.done;
      if (end !== undefined) return end;
    }
    let found: SessionEvent<'turn/end'> | undefined;
    for await (const event of readJournal(this.source(id))) {
      if (event.type === 'turn/end' && (turn === undefined || event.data.turn === turn)) found = event as SessionEvent<'turn/end'>;
    }
    return found;
  }

  /**
   * Aborts the running turn: its stream stops, running tools are killed, pending approvals are
   * denied, and it ends `aborted`. Returns the turn's number.
   * @throws HarnessError `NO_RUNNING_TURN` (409), `SESSION_NOT_FOUND`.
   */
  async abortTurn(sessionId: string, reason = 'The turn was aborted over the API.'): Promise<{ turn: number }> {
    await this.idOf(sessionId);
    const running = this.running.get(sessionId);
    if (running === undefined || running.turn === undefined) {
      throw new HarnessError('NO_RUNNING_TURN', `No turn is running in session ${sessionId}; there is nothing to abort.`, { details: { sessionId } });
    }
    running.controller.abort(new HarnessError('ABORTED', reason));
    return { turn: running.turn };
  }

  /**
   * What the session's model calls (replies and compaction summaries) cost at the prices of the
   * token-meter plugin's config; undefined when the config loads no token meter.
   * @throws HarnessError `SESSION_NOT_FOUND`, `INVALID_SESSION_ID`.
   */
  async costOf(sessionId: string): Promise<SessionCost | undefined> {
    const id = await this.idOf(sessionId);
    const meter = this.harness.kernel.service<PriceService>('tokenMeter');
    if (meter === undefined) return undefined;
    await this.flushRunning(sessionId);
    let costUsd = 0;
    let pricedCallCount = 0;
    let callCount = 0;
    let turn = 0;
    const turnCostUsd: Record<string, number> = {};
    const add = (provider: unknown, model: unknown, usage: TokenUsage | undefined): void => {
      if (usage === undefined || typeof provider !== 'string' || typeof model !== 'string') return;
      callCount++;
      const usd = meter.cost(provider, model, usage);
      if (usd === undefined) return;
      pricedCallCount++;
      costUsd += usd;
      turnCostUsd[turn] = (turnCostUsd[turn] ?? 0) + usd;
    };
    for await (const event of readJournal(this.source(id))) {
      if (event.type === 'turn/start') turn = event.data.turn;
      else if (event.type === 'assistant/message') add(event.data.message.source.provider, event.data.message.source.model, event.data.usage);
      else if (event.type === 'compaction/summary') add(event.data.provider, event.data.model, event.data.usage);
    }
    return { costUsd, turnCostUsd, pricedCallCount, callCount };
  }

  /**
   * What a listed session's calls cost, priced from its summary's `usageByModel` (the list read
   * each journal once; nothing is read again). Undefined when the config loads no token meter.
   */
  costOfSummary(summary: Pick<SessionSummary, 'usageByModel'>): Omit<SessionCost, 'turnCostUsd'> | undefined {
    const meter = this.harness.kernel.service<PriceService>('tokenMeter');
    if (meter === undefined) return undefined;
    let costUsd = 0;
    let pricedCallCount = 0;
    let callCount = 0;
    for (const { provider, model, usage, callCount: calls } of summary.usageByModel ?? []) {
      callCount += calls;
      const usd = meter.cost(provider, model, usage);
      if (usd === undefined) continue;
      pricedCallCount += calls;
      costUsd += usd;
    }
    return { costUsd, pricedCallCount, callCount };
  }

  /** The turn this server is running in the session (its number and first seq), if any. */
  runningTurnOf(sessionId: string): { readonly turn: number; readonly startSeq: number } | undefined {
    const running = this.running.get(sessionId);
    return running?.turn === undefined ? undefined : { turn: running.turn, startSeq: running.startSeq! };
  }

  /**
   * The running turn of each listed session, wherever it runs: this server's own (`runsHere`),
   * and a turn any other process writing to the store runs — a summary's `openTurn` whose session
   * a live writer holds the lease of (`JournalStore.liveWriters`, one query for the whole list).
   * An open turn with no live writer is one a dead writer left (not running). A store that cannot
   * tell who writes: this server's turns only.
   */
  async runningTurns(summaries: readonly Pick<SessionSummary, 'id' | 'openTurn'>[]): Promise<Map<string, RunningTurn>> {
    const out = new Map<string, RunningTurn>();
    const elsewhere: Pick<SessionSummary, 'id' | 'openTurn'>[] = [];
    for (const summary of summaries) {
      const own = this.runningTurnOf(summary.id);
      if (own !== undefined) out.set(summary.id, { ...own, runsHere: true });
      else if (summary.openTurn !== undefined) elsewhere.push(summary);
    }
    const store = this.harness.store;
    if (elsewhere.length === 0 || store.liveWriters === undefined) return out;
    const live = await store.liveWriters(elsewhere.map((summary) => summary.id));
    for (const summary of elsewhere) if (live.has(summary.id)) out.set(summary.id, { ...summary.openTurn!, runsHere: false });
    return out;
  }

  /** Open turn `turn` of session `id` when a live writer holds the session (another process runs it), else undefined. */
  private async storedRunningTurn(id: string, turn: number): Promise<RunningTurn | undefined> {
    const store = this.harness.store;
    if (store.liveWriters === undefined || !(await store.liveWriters([id])).has(id)) return undefined;
    let startSeq: number | undefined;
    for await (const event of readJournal(this.source(id))) if (event.type === 'turn/start' && event.data.turn === turn) startSeq = event.seq;
    return startSeq === undefined ? undefined : { turn, startSeq, runsHere: false };
  }

  /** The calls of the session waiting for an answer. @throws HarnessError `SESSION_NOT_FOUND`. */
  async pendingApprovals(sessionId: string): Promise<PendingApproval[]> {
    await this.idOf(sessionId);
    return this.desk.pendingIn(sessionId);
  }

  /**
   * Answers a pending approval, exactly once (the loop journals it as `approval/decided`).
   * @throws HarnessError `APPROVAL_ALREADY_DECIDED` (409), `APPROVAL_NOT_FOUND` (404),
   *   `SESSION_NOT_FOUND` (404).
   */
  async answerApproval(sessionId: string, callId: string, reply: ApprovalReply): Promise<PendingApproval> {
    const id = await this.idOf(sessionId);
    try {
      return this.desk.answer(sessionId, callId, reply);
    } catch (error) {
      if (!(HarnessError.is(error) && error.code === 'APPROVAL_NOT_FOUND')) throw error;
      // Decided before this server knew it (another process, an earlier run): still a conflict.
      await this.flushRunning(sessionId);
      for await (const event of readJournal(this.source(id))) {
        if (event.type === 'approval/decided' && event.data.callId === callId) throw alreadyDecided(sessionId, callId, event.data.decision);
      }
      throw error;
    }
  }

  /**
   * Checks that the store holds session `sessionId` (for a caller that must answer 404 before it
   * starts a stream, see {@link events}).
   * @throws HarnessError `SESSION_NOT_FOUND`, `INVALID_SESSION_ID`.
   */
  async requireSession(sessionId: string): Promise<void> {
    await this.idOf(sessionId);
  }

  /**
   * The session's events after seq `after` (default 0: all), then each new one as the store writes
   * it — by this process or by any other writing to the same store — each exactly once in seq
   * order, until `signal` aborts, the iterator is returned, or the service closes (it then first
   * passes on every event stored by then: see {@link close}).
   *
   * Only stored events are passed on, never one a crash could still lose (and a repair then
   * replace at the same seq): the file store's written lines (in the operating system, so they
   * survive the server being killed; fsynced at the turn's next checkpoint, so a machine crash
   * before it could still lose them), the PostgreSQL store's committed rows.
   *
   * Latency: a turn this process runs reaches its streams when its batch is written — at most the
   * journal's flush interval (100 ms) after the event was appended, plus one `write(2)` or one
   * COMMIT. A turn another process runs arrives through the store's tail: with PostgreSQL on the
   * `NOTIFY` after each committed batch (else at the tail's poll, `tailPollMs`), with the file
   * store on a change notice of the file (else at its 250 ms poll).
   *
   * One live tail of the store per session serves all of this process's streams of it (one
   * PostgreSQL query per committed batch, however many subscribers): started at the store's end by
   * the first subscriber to reach it, stopped after the last (tail.ts). A stream from further back
   * first reads the store itself, in pages, as fast as its consumer takes the events (it holds a
   * page and at most 1 024 queued events, however far behind it started), then joins the shared
   * tail. Each live stream has its own queue: `maxQueued` bounds it (default unbounded) — a
   * consumer that falls further behind the writer finds its queue closed (`overflowed`) and
   * subscribes again from the last seq it read; it never slows the other streams or the writer.
   * @throws HarnessError `INVALID_SESSION_ID`. A session the store does not hold ends the
   *   iteration at once (check first with {@link requireSession}).
   */
  events(sessionId: string, options: { after?: number; signal?: AbortSignal; maxQueued?: number } = {}): EventQueue {
    const id = checkId(sessionId);
    const { signal } = options;
    if (signal?.aborted || this.closed) {
      const queue = new EventQueue(() => undefined);
      queue.close();
      return queue;
    }
    const queue = this.tails.subscribe(id, options.after ?? 0, options.maxQueued === undefined ? {} : { maxQueued: options.maxQueued });
    if (signal !== undefined) {
      const onAbort = (): void => queue.close();
      signal.addEventListener('abort', onAbort, { once: true });
      queue.closed.addEventListener('abort', () => signal.removeEventListener('abort', onAbort), { once: true });
    }
    return queue;
  }

  /** Open subscribers of a session's events, catching up or live (for tests and the bench). */
  subscriberCount(sessionId: string): number {
    return this.tails.count(sessionId);
  }

  /** Subscribers of a session still catching up on a read of the store of their own (for tests and the bench). */
  catchingUpCount(sessionId: string): number {
    return this.tails.catchingUp(sessionId);
  }

  /** Sessions whose live tail runs in this process (one each, whatever their subscribers; for tests and the bench). */
  get tailCount(): number {
    return this.tails.size;
  }

  /**
   * Aborts every running turn and waits for them to be journaled and closed; then ends every
   * stream of {@link events} after passing on every event the store holds by then (a client that
   * read a stream to its end has seen all of the session there was); stops the sink.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const done = [...this.running.values()].map((running) => {
      running.controller.abort(new HarnessError('ABORTED', 'The server is shutting down.'));
      return running.done;
    });
    await Promise.all(done);
    await this.tails.close();
    for (const dispose of this.disposers.splice(0).reverse()) dispose();
  }

  private async finishTurn(sessionId: string, running: Running, iterator: AsyncIterator<AnySessionEvent>, settle: (end: SessionEvent<'turn/end'> | undefined) => void): Promise<void> {
    let end: SessionEvent<'turn/end'> | undefined;
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done) break;
        // A child session's (subagent's) events come marked with their origin: not this turn's end.
        if (next.value.type === 'turn/end' && (next.value as { origin?: unknown }).origin === undefined) end = next.value as SessionEvent<'turn/end'>;
      }
    } catch (error) {
      this.harness.kernel.bus.report({
        level: 'error',
        code: 'SERVE_TURN_FAILED',
        message: `Session ${sessionId}: the turn failed outside the loop: ${error instanceof Error ? error.message : String(error)}`,
        source: 'serve',
      });
    } finally {
      await running.session?.close().catch(() => undefined);
      if (this.running.get(sessionId) === running) this.running.delete(sessionId);
      settle(end);
    }
  }

  private approverFor(sessionId: string, policy: PolicyService | undefined, policyName: string | undefined, signal: AbortSignal): ApproveFn {
    const ask = (request: ApprovalRequest): Promise<ApprovalAnswer> =>
      this.desk.ask(request, {
        timeoutMs: this.approvalTimeoutMs,
        signal,
        onParked: async (pending) => {
          await this.running.get(sessionId)?.session?.session.append('approval/requested', {
            turn: pending.turn,
            step: pending.step,
            callId: pending.callId,
            name: pending.name,
            permission: pending.permission,
            deadlineAtMs: pending.deadlineAtMs,
          });
        },
      });
    if (policy === undefined) {
      if (policyName !== undefined)
        throw new HarnessError(
          'UNKNOWN_POLICY',
          `Approval policy "${policyName}" needs the approvals plugin, which the config does not load; leave the policy out (every call is then asked) or load plugins/approvals.`,
        );
      return ask;
    }
    return policy.create(policyName ?? policy.defaultPolicy, {
      ask: async (request) => {
        const answer = await ask(request);
        const decision = typeof answer === 'string' ? answer : answer.decision;
        const reason = typeof answer === 'string' ? undefined : answer.reason;
        return { allow: decision === 'allow', ...(reason ? { reason } : {}) };
      },
    });
  }

  private policyService(): PolicyService | undefined {
    return this.harness.kernel.service<PolicyService>('approvals');
  }

  /**
   * A client's session id, checked (never a path), of a session the store holds.
   * @throws HarnessError `INVALID_SESSION_ID`, `SESSION_NOT_FOUND`.
   */
  private async idOf(sessionId: string): Promise<string> {
    const id = checkId(sessionId);
    if (this.running.has(id)) return id;
    if (!(await hasSession(this.harness.store, id))) {
      throw new HarnessError('SESSION_NOT_FOUND', `No session ${id}; GET /v1/sessions lists the sessions there are.`, { details: { sessionId: id } });
    }
    return id;
  }

  /** The lines of session `id` in the store (one read). */
  private source(id: string): LineSource {
    return storeSource(this.harness.store, id);
  }

  /** Whether a job's marker is journaled, and a turn after it (a marker alone: its turn never started). */
  private async jobState(
    id: string,
    jobId: string,
  ): Promise<{ state: 'none' } | { state: 'marked'; requestDigest?: string } | { state: 'started'; turn: number; startSeq: number; requestDigest?: string }> {
    let marked = false;
    let requestDigest: string | undefined;
    for await (const event of readJournal(this.source(id))) {
      if (event.type === 'serve/turn-job') {
        marked = event.data.jobId === jobId;
        if (marked) requestDigest = event.data.requestDigest;
      } else if (marked && event.type === 'turn/start') return { state: 'started', turn: event.data.turn, startSeq: event.seq, ...(requestDigest === undefined ? {} : { requestDigest }) };
    }
    return marked ? { state: 'marked', ...(requestDigest === undefined ? {} : { requestDigest }) } : { state: 'none' };
  }

  /** Writes what a running turn has queued, so a read of the file sees every event appended so far. */
  private async flushRunning(sessionId: string): Promise<void> {
    await this.running
      .get(sessionId)
      ?.session?.session.checkpoint()
      .catch(() => undefined);
  }

  private assertOpen(): void {
    if (this.closed) throw new HarnessError('SERVER_CLOSED', 'The turn service is closed.');
  }
}

/**
 * A session id as the file store names journals (`<dataDir>/sessions/<id>.jsonl`): letters, digits,
 * `.`, `_`, `-`, no separator. Checked here so a client's id can never be read as a path.
 */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** @throws HarnessError `INVALID_SESSION_ID`. */
function checkId(sessionId: string): string {
  if (typeof sessionId !== 'string' || !SESSION_ID.test(sessionId)) {
    throw new HarnessError('INVALID_SESSION_ID', `${JSON.stringify(String(sessionId)).slice(0, 80)} is not a session id (letters, digits, '.', '_', '-').`, {
      details: { sessionId: String(sessionId).slice(0, 80) },
    });
  }
  return sessionId;
}

/**
 * A store the turn API can serve from: it must take writer leases (one writer per session across
 * servers) and tail live (a stream follows turns other servers run).
 * @throws HarnessError `STORE_UNSUPPORTED` naming the store's kind and location (never a password).
 */
export function checkServable(store: JournalStore): void {
  const missing = (['lease', 'tail', 'read', 'list', 'create'] as const).filter((method) => typeof (store as unknown as Record<string, unknown>)[method] !== 'function');
  if (missing.length > 0) {
    throw new HarnessError(
      'STORE_UNSUPPORTED',
      `harness serve cannot serve from the ${store.kind} store ${store.location}: it has no ${missing.join(', ')} (a served session needs a writer lease and a live tail). Serve from the file store or a postgres:// store.`,
      { details: { kind: store.kind, location: store.location, missing } },
    );
  }
}

/** Whether `store` holds session `id` (reads at most its header). */
async function hasSession(store: JournalStore, id: string): Promise<boolean> {
  if (store instanceof FileJournalStore) return existsSync(store.pathOf(id));
  try {
    for await (const _ of store.read(id, { toSeq: 0 })) break;
    return true;
  } catch (error) {
    if (HarnessError.is(error) && error.code === 'JOURNAL_NOT_FOUND') return false;
    throw error;
  }
}

/**
 * The event lines of session `id` after `afterSeq`, live, as a reader's source: its header line
 * (a reader checks it), then the store's tail until `signal` aborts.
 */
function tailSource(store: JournalStore, id: string, afterSeq: number, signal: AbortSignal): LineSource {
  async function* batches(): AsyncGenerator<readonly JournalLine[], void, undefined> {
    for await (const lines of store.read(id, { toSeq: 0 })) {
      yield lines.slice(0, 1);
      break;
    }
    yield* store.tail(id, { afterSeq, signal });
  }
  return { name: store.locationOf(id), batches: batches(), atomic: store.atomicWrites, fromSeq: afterSeq + 1 };
}

/**
 * The SHA-256 (hex) of what makes a turn's request the same request: prompt, provider, model,
 * reasoning effort and policy, in a fixed order (a retry's trace context may be a new one, as the
 * queue's comparison has it).
 */
function requestDigestOf(input: TurnInput): string {
  const fields = [input.prompt, input.provider ?? null, input.model ?? null, input.reasoningEffort ?? null, input.approve ?? null];
  return createHash('sha256')
    .update(`harness-turn-request\n${JSON.stringify(fields)}`, 'utf8')
    .digest('hex');
}

function keyReused(sessionId: string): HarnessError {
  return new HarnessError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used for another turn; send a new key for a new turn.', { details: { sessionId } });
}

function busy(sessionId: string, turn: number | undefined): HarnessError {
  return new HarnessError('SESSION_BUSY', `Session ${sessionId} is running turn ${turn ?? '(starting)'}; wait for its turn/end or abort it (POST /v1/sessions/${sessionId}/abort).`, {
    details: { sessionId, ...(turn === undefined ? {} : { turn }) },
  });
}

function titleOf(prompt: string): string {
  const line = prompt.trim().split('\n')[0]!;
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
