/**
 * plugins/token-meter — `ctx.tokenMeter`: a projection over session events (the `session/event`
 * sink), never a second source of truth.
 *
 * - Usage per request (each `assistant/message` and compaction summary that reported usage) and per
 *   session, by class: input, output, cache read, cache write, reasoning. Classes follow
 *   `TokenUsage`: input/cache read/cache write/output are disjoint; reasoning is the part of output
 *   spent reasoning, so it is shown but never added again. An unknown count stays unknown (absent;
 *   a count that is not a number is ignored), and each event is counted once (events are keyed by
 *   session and seq: a delivery seen again changes nothing).
 * - Cost from the config's price table: USD per million tokens per class, per provider and model
 *   (`'*'` as a model matches any). Reasoning is priced as output (it is part of output). Costs are
 *   derived when read, from the current generation's prices.
 * - Context pressure (tokens the next request carries): the last reported usage of the conversation
 *   (input + cache read + cache write + output of the latest reply that reported a prompt count)
 *   plus an estimate (characters / 4) of every message added since. A `surface/replace`
 *   (compaction) moves it at once: the estimate of the replaced messages the report covered is
 *   taken out of the reported count and the estimate of their replacement put in (never below the
 *   estimate of the covered messages that remain).
 * - Subagents: a child session's deliveries name their parent (`parentSessionId`); the parent's
 *   usage includes its children's (and theirs, level by level): their requests (marked with their
 *   `sessionId`), totals and cost. Context pressure stays the session's own.
 * Emits `usage/updated` after every change (for a child's change, for its ancestors too).
 *
 * A session is counted from the first event this process delivered for it (a session resumed from
 * a journal starts with what is appended after the resume).
 *
 * Hot reload: the projection survives a reload. The new generation adopts the plain-data state of
 * the generation it replaces through the service it is about to replace (`ctx.tokenMeter`, read
 * during setup): both share the same per-session records until the swap (the old generation keeps
 * counting until then, the seq check keeps anything from being counted twice), so no event is lost
 * or double-counted, and costs follow the new generation's price table. A state of another shape
 * (a `STATE_VERSION` change) is not adopted: the new generation starts empty.
 */
import { definePlugin, prefixSum, z, type EmitHook, type Message, type SessionEventDelivery, type TokenUsage } from '../../runtime/index.ts';

export type UsageClass = 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens' | 'reasoningTokens';
export const USAGE_CLASSES: readonly UsageClass[] = ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'];

export interface RequestUsage {
  readonly seq: number;
  readonly provider: string;
  readonly model: string;
  readonly usage: TokenUsage;
  /** USD; absent when no price is configured for the model. */
  readonly costUsd?: number;
  readonly purpose: 'agent' | 'compaction';
  /** Set on a request of a child session (a subagent) rolled up into this one: that session's id. */
  readonly sessionId?: string;
}

export interface SessionUsage {
  readonly sessionId: string;
  /** Its own requests, then those of its child sessions (each marked with its `sessionId`). */
  readonly requests: readonly RequestUsage[];
  /** Per-class sums, children included; a class no request reported is absent. */
  readonly totals: TokenUsage;
  /** USD over the requests that had a price; `pricedRequestCount` says how many. */
  readonly costUsd: number;
  readonly pricedRequestCount: number;
  /** Estimated tokens the next request carries (see the module doc). */
  readonly contextTokens: number;
}

export interface UsageUpdatedEvent {
  readonly sessionId: string;
  readonly usage: SessionUsage;
}

export interface TokenMeter {
  /** The usage of a session seen by this process (empty totals for an unknown one). */
  session(sessionId: string): SessionUsage;
  sessions(): readonly string[];
  /** Cost in USD of one usage at a provider/model's price, or undefined without a price. */
  cost(provider: string, model: string, usage: TokenUsage): number | undefined;
  /** Characters / 4 over a message's content: the estimate used for unreported tokens. */
  estimateTokens(messages: readonly Message[]): number;
}

declare global {
  namespace Harness {
    interface Services {
      tokenMeter?: TokenMeter;
    }
    interface HookMap {
      'usage/updated': EmitHook<UsageUpdatedEvent>;
    }
  }
}

const price = z.strictObject({
  inputTokens: z.number().min(0).optional(),
  outputTokens: z.number().min(0).optional(),
  cacheReadTokens: z.number().min(0).optional(),
  cacheWriteTokens: z.number().min(0).optional(),
});
export type Price = z.infer<typeof price>;

/** One request's usage as recorded (cost is derived when read). */
interface RequestRecord {
  readonly seq: number;
  readonly provider: string;
  readonly model: string;
  readonly usage: TokenUsage;
  readonly purpose: 'agent' | 'compaction';
}

/** The projection of one session: plain data, shared with the next generation on a reload. */
interface Tracker {
  readonly requests: RequestRecord[];
  readonly totals: Record<string, number>;
  /** Events arrive in seq order; one seen again (a replayed delivery) is not counted twice. */
  lastSeq: number;
  /** Estimated tokens per surface message, parallel to the surface. */
  readonly messageTokens: number[];
  /** Tokens the last report said the conversation had, and how many surface messages it covered. */
  reported: { tokens: number; messageCount: number } | undefined;
}

/** The state handed from one generation to the next (see the module doc). */
interface MeterState {
  readonly version: number;
  readonly trackers: Map<string, Tracker>;
  /** Child session → its parent (from the deliveries' `parentSessionId`). Absent in a state of an older generation. */
  parents?: Map<string, string>;
}

/** Bump when `Tracker` changes shape: a new generation then starts empty instead of adopting it. */
const STATE_VERSION = 1;
/** Where a generation's service exposes its state to the next generation (a registry symbol: the same in every module generation). */
const STATE = Symbol.for('harness.token-meter.state');

const PROMPT_CLASSES = ['inputTokens', 'cacheReadTokens', 'cacheWriteTokens'] as const;

export function estimateMessageTokens(message: Message): number {
  let chars = 0;
  for (const block of message.content) {
    if (block.type === 'text' || block.type === 'reasoning') chars += block.text.length;
    else if (block.type === 'tool-call') chars += block.name.length + block.arguments.length;
    else if (block.type === 'tool-result') for (const part of block.content) chars += part.type === 'text' ? part.text.length : 4000;
    else chars += 4000;
  }
  return Math.ceil(chars / 4);
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

/**
 * `estimateTokens` over a message list, summed per conversation from where the last list's frozen
 * prefix ended (`prefixSum`): compaction asks at every step, and reading each message of a long
 * history per step made turns slower as the session grew (issue 16).
 */
const prefixEstimator = (): ((messages: readonly Message[]) => number) => prefixSum(estimateMessageTokens);
const count = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

export default definePlugin({
  name: 'token-meter',
  config: z
    .strictObject({
      /** provider → model (or '*') → USD per million tokens, per class. */
      prices: z.record(z.string(), z.record(z.string(), price)).default({}),
    })
    .default({ prices: {} }),
  setup(ctx, config) {
    ctx.declareHook('usage/updated', 'emit');
    const previous = (ctx.tokenMeter as { [STATE]?: MeterState } | undefined)?.[STATE];
    const state: MeterState = previous !== undefined && previous.version === STATE_VERSION ? previous : { version: STATE_VERSION, trackers: new Map() };
    const trackers = state.trackers;
    state.parents ??= new Map();
    const parents = state.parents;
    const childrenOf = (sessionId: string): string[] => [...parents].filter(([, parent]) => parent === sessionId).map(([child]) => child);
    const tracker = (sessionId: string): Tracker => {
      let found = trackers.get(sessionId);
      if (found === undefined) {
        found = { requests: [], totals: {}, lastSeq: 0, messageTokens: [], reported: undefined };
        trackers.set(sessionId, found);
      }
      return found;
    };
    const cost = (provider: string, model: string, usage: TokenUsage): number | undefined => {
      const table = config.prices[provider];
      const p = table?.[model] ?? table?.['*'];
      if (p === undefined) return undefined;
      let usd = 0;
      for (const key of ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens'] as const) {
        const tokens = usage[key];
        if (count(tokens)) usd += (tokens * (p[key] ?? 0)) / 1_000_000;
      }
      return usd;
    };
    /** Priced requests of this generation (its prices), made once per request. */
    const priced = new WeakMap<RequestRecord, RequestUsage>();
    const withCost = (request: RequestRecord): RequestUsage => {
      let out = priced.get(request);
      if (out === undefined) {
        const usd = cost(request.provider, request.model, request.usage);
        out = usd === undefined ? request : Object.freeze({ ...request, costUsd: usd });
        priced.set(request, out);
      }
      return out;
    };
    /**
     * This generation's priced list of a tracker's requests with its cost sums, extended as requests
     * are recorded (requests are only ever appended): a snapshot per event reads no older request.
     */
    const views = new WeakMap<Tracker, { list: RequestUsage[]; costUsd: number; pricedRequestCount: number; frozen: readonly RequestUsage[] | undefined }>();
    const pricedView = (t: Tracker) => {
      let view = views.get(t);
      if (view === undefined) {
        view = { list: [], costUsd: 0, pricedRequestCount: 0, frozen: undefined };
        views.set(t, view);
      }
      for (let i = view.list.length; i < t.requests.length; i++) {
        const request = withCost(t.requests[i]!);
        view.list.push(request);
        if (request.costUsd !== undefined) {
          view.costUsd += request.costUsd;
          view.pricedRequestCount++;
        }
        view.frozen = undefined;
      }
      view.frozen ??= Object.freeze(view.list.slice());
      return view;
    };
    /** Requests of a session's children, level by level, each marked with its session. */
    const childRequests = (sessionId: string, seen: Set<string>): RequestUsage[] => {
      const out: RequestUsage[] = [];
      for (const child of childrenOf(sessionId)) {
        if (seen.has(child)) continue;
        seen.add(child);
        for (const request of trackers.get(child)?.requests ?? []) out.push({ ...withCost(request), sessionId: child });
        out.push(...childRequests(child, seen));
      }
      return out;
    };
    const snapshot = (sessionId: string, t: Tracker | undefined): SessionUsage => {
      const children = childRequests(sessionId, new Set([sessionId]));
      if (t === undefined && children.length === 0) return { sessionId, requests: [], totals: {}, costUsd: 0, pricedRequestCount: 0, contextTokens: 0 };
      const view = t === undefined ? undefined : pricedView(t);
      const own = view?.frozen ?? [];
      const requests = children.length === 0 ? own : [...own, ...children];
      const totals: Record<string, number> = { ...t?.totals };
      for (const request of children) {
        for (const key of USAGE_CLASSES) {
          const tokens = request.usage[key];
          if (count(tokens)) totals[key] = (totals[key] ?? 0) + tokens;
        }
      }
      let costUsd = view?.costUsd ?? 0;
      let pricedRequestCount = view?.pricedRequestCount ?? 0;
      for (const request of children) {
        if (request.costUsd === undefined) continue;
        costUsd += request.costUsd;
        pricedRequestCount++;
      }
      const reported = t?.reported;
      return {
        sessionId,
        requests,
        totals,
        costUsd,
        pricedRequestCount,
        contextTokens: t === undefined ? 0 : (reported?.tokens ?? 0) + sum(t.messageTokens.slice(reported?.messageCount ?? 0)),
      };
    };
    const record = (t: Tracker, entry: RequestRecord): void => {
      t.requests.push(Object.freeze(entry));
      for (const key of USAGE_CLASSES) {
        const tokens = entry.usage[key];
        if (count(tokens)) t.totals[key] = (t.totals[key] ?? 0) + tokens;
      }
    };
    ctx.on('session/event', ({ sessionId, event, parentSessionId }: SessionEventDelivery) => {
      if (event.type === 'assistant/chunk' || event.type === 'tool/output') return; // hot path: nothing to count
      if (parentSessionId !== undefined && !parents.has(sessionId)) parents.set(sessionId, parentSessionId);
      const t = tracker(sessionId);
      if (event.seq <= t.lastSeq) return;
      t.lastSeq = event.seq;
      let changed = false;
      switch (event.type) {
        case 'user/message':
        case 'tool/result':
          t.messageTokens.push(estimateMessageTokens(event.data.message));
          changed = true;
          break;
        case 'assistant/message': {
          const { message, usage } = event.data;
          const estimate = estimateMessageTokens(message);
          t.messageTokens.push(estimate);
          if (usage !== undefined) {
            record(t, { seq: event.seq, provider: message.source.provider, model: message.source.model, usage, purpose: 'agent' });
            // Only a report that says how big the prompt was replaces the estimate (an unknown count stays unknown).
            if (PROMPT_CLASSES.some((key) => count(usage[key]))) {
              const prompt = sum(PROMPT_CLASSES.map((key) => (count(usage[key]) ? usage[key] : 0)));
              t.reported = { tokens: prompt + (count(usage.outputTokens) ? usage.outputTokens : estimate), messageCount: t.messageTokens.length };
            }
          }
          changed = true;
          break;
        }
        case 'compaction/summary':
          if (event.data.usage !== undefined) {
            record(t, { seq: event.seq, provider: event.data.provider, model: event.data.model, usage: event.data.usage, purpose: 'compaction' });
            changed = true;
          }
          break;
        case 'surface/replace': {
          const length = t.messageTokens.length;
          const start = Math.min(Math.max(0, event.data.start), length);
          const end = Math.min(Math.max(start, event.data.end), length);
          const inserted = event.data.messages.map(estimateMessageTokens);
          const removed = t.messageTokens.splice(start, end - start, ...inserted);
          const reported = t.reported;
          if (reported !== undefined && start < reported.messageCount) {
            // The report covered [0, messageCount): take out what it covered of the replaced range, put in the replacement.
            const covered = removed.slice(0, Math.min(end, reported.messageCount) - start);
            const messageCount = reported.messageCount - covered.length + inserted.length;
            const floor = sum(t.messageTokens.slice(0, messageCount));
            t.reported = { tokens: Math.max(floor, reported.tokens - sum(covered) + sum(inserted)), messageCount };
          }
          changed = true;
          break;
        }
        default:
          break;
      }
      if (!changed) return;
      ctx.emit('usage/updated', { sessionId, usage: snapshot(sessionId, t) });
      // A child's change is a change of its ancestors' usage too.
      const seen = new Set([sessionId]);
      for (let up = parents.get(sessionId); up !== undefined && !seen.has(up); up = parents.get(up)) {
        seen.add(up);
        ctx.emit('usage/updated', { sessionId: up, usage: snapshot(up, trackers.get(up)) });
      }
    });
    const service: TokenMeter & { readonly [STATE]: MeterState } = {
      session: (sessionId) => snapshot(sessionId, trackers.get(sessionId)),
      sessions: () => [...trackers.keys()],
      cost,
      estimateTokens: prefixEstimator(),
      [STATE]: state,
    };
    ctx.provide('tokenMeter', service);
  },
});
