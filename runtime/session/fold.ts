/**
 * The fold (DESIGN "Sessions and the journal": state is a fold over the events, with immer).
 *
 * - `reduceEvent(state, event)` is one transition, made with immer's `produce`.
 * - `foldEvents(events, init?)` folds many events through one immer draft (`createDraft` …
 *   `finishDraft`). Both run the same reducers and give equal states.
 * - `stateAt(events, seq)` is the fold of the events with `seq <= seq`.
 *
 * The surface (`messages`) is kept out of immer's drafting: reducers change it through a
 * {@link Surface} (append, replace a range). Immer's per-element bookkeeping on a draft array costs
 * milliseconds per transition once a surface holds thousands of messages; instead, one transition
 * builds the next frozen array from the previous one (one copy of the pointers, ~10-20 ns per
 * message — compaction keeps a surface short) and a bulk fold pushes onto one working array that
 * is frozen once at the end.
 *
 * Pending tool calls are kept out of immer too: the {@link Folder} holds them in a working list
 * with an index by call id (tombstones for answered calls, dropped at `finish()`), so `tool/call`,
 * `approval/decided`, `tool/start` and `tool/result` cost O(1) each whatever the number of calls in
 * flight — a splice of an immer draft array drafts every element it moves (about 1.6 ms per
 * `tool/result` at 1,800 calls in one message; issue 22).
 *
 * The hot path: `assistant/chunk`, `tool/output` and `llm/retry` do not change the state (nor do
 * `request/snapshot` and `plugin/reload`), and an ignorable record of an unknown type is skipped; for those `reduceEvent` returns the very same
 * state object without entering immer (one chunk record per stream chunk). Consequently
 * `state.lastSeq` is the seq of the last event that changed the state.
 *
 * Transitions: `user/message`, `assistant/message`, `tool/result` append their `message` to the
 * surface; `surface/replace` splices `[start, end)`; `request/header` sets the header; turn and
 * step open and close; `tool/call` adds a pending call, `approval/decided` sets its decision,
 * `tool/start` marks it started, `tool/result` removes it; usage of `assistant/message` and
 * `compaction/summary` is summed per class (a class stays absent until some event reports it);
 * `compaction/start|end` toggle `compacting`; `session/title` sets the title.
 */
import { createDraft, finishDraft, Immer, produce, type Draft } from 'immer';
import { HarnessError } from '../kernel/errors.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import type { Message, TokenUsage } from '../llm/types.ts';
import { noteAppended } from '../llm/prefix.ts';
import type { AnySessionEvent, SessionEvent, SessionEventMap } from './events.ts';
import { eventTypeRegistration, type EventReducer, type Surface } from './registry.ts';
import type { PendingToolCall, SessionState } from './types.ts';

type MutableState = Draft<SessionState>;

/** The state of a session with no events. */
export function initialState(sessionId: string): SessionState {
  return Object.freeze({
    sessionId,
    lastSeq: 0,
    messages: Object.freeze([]),
    turnCount: 0,
    pendingToolCalls: Object.freeze([]),
    usage: Object.freeze({}),
    compacting: false,
  }) as SessionState;
}

const USAGE_KEYS = ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'] as const;

function addUsage(draft: MutableState, usage: TokenUsage | undefined): void {
  if (usage === undefined || usage === null) return;
  const total = draft.usage as { -readonly [K in keyof TokenUsage]: number | undefined };
  for (const key of USAGE_KEYS) {
    const value = usage[key];
    if (typeof value === 'number') total[key] = (total[key] ?? 0) + value;
  }
}

function data<T extends keyof SessionEventMap>(event: AnySessionEvent): SessionEventMap[T] {
  return (event as SessionEvent<T>).data;
}

const CORE_REDUCERS: Record<string, EventReducer> = {
  'turn/start'(draft, event) {
    const { turn } = data<'turn/start'>(event);
    draft.turnCount += 1;
    draft.openTurn = { turn, stepOpen: false };
  },
  'turn/end'(draft, event) {
    const { turn, reason } = data<'turn/end'>(event);
    draft.openTurn = undefined;
    draft.lastTurnEnd = { turn, reason };
  },
  'step/start'(draft, event) {
    const { turn, step } = data<'step/start'>(event);
    if (draft.openTurn === undefined) draft.openTurn = { turn, step, stepOpen: true };
    else {
      draft.openTurn.step = step;
      draft.openTurn.stepOpen = true;
    }
  },
  'step/end'(draft) {
    if (draft.openTurn !== undefined) draft.openTurn.stepOpen = false;
  },
  'user/message'(_draft, event, surface) {
    surface.append(data<'user/message'>(event).message);
  },
  'assistant/message'(draft, event, surface) {
    const value = data<'assistant/message'>(event);
    surface.append(value.message);
    addUsage(draft, value.usage);
  },
  'request/header'(draft, event) {
    draft.header = data<'request/header'>(event).header as never;
  },
  'surface/replace'(_draft, event, surface) {
    const { start, end, messages } = data<'surface/replace'>(event);
    const length = surface.length;
    if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end < start || end > length || !Array.isArray(messages)) {
      throw new HarnessError('INVALID_EVENT_DATA', `surface/replace (seq ${event.seq}) replaces [${start}, ${end}) of a surface of ${length} messages.`, {
        details: { seq: event.seq, start, end, length },
      });
    }
    surface.replace(start, end, messages);
  },
  'compaction/start'(draft) {
    draft.compacting = true;
  },
  'compaction/summary'(draft, event) {
    addUsage(draft, data<'compaction/summary'>(event).usage);
  },
  'compaction/end'(draft) {
    draft.compacting = false;
  },
  'session/title'(draft, event) {
    draft.title = data<'session/title'>(event).title;
  },
};

/** The pending-call transitions: run by the {@link Folder} on its {@link PendingCalls}, not on the draft. */
type PendingReducer = (pending: PendingCalls, event: AnySessionEvent, surface: Surface) => void;

const PENDING_REDUCERS: Record<string, PendingReducer> = {
  'tool/call'(pending, event) {
    const { callId, name, arguments: args, turn, step } = data<'tool/call'>(event);
    pending.add({ callId, name, arguments: args, turn, step, started: false });
  },
  'approval/decided'(pending, event) {
    const { callId, decision } = data<'approval/decided'>(event);
    pending.update(callId, 'decision', decision);
  },
  'tool/start'(pending, event) {
    pending.update(data<'tool/start'>(event).callId, 'started', true);
  },
  'tool/result'(pending, event, surface) {
    const value = data<'tool/result'>(event);
    surface.append(value.message);
    pending.remove(value.callId);
  },
};

type WorkingCall = { -readonly [K in keyof PendingToolCall]: PendingToolCall[K] };

/**
 * The pending calls while a fold is in progress: the list in call order, answered calls left as
 * holes until {@link PendingCalls.finish}, and per call id the indexes of its live entries (the
 * first one is the one a result answers, as a scan from the front would find it).
 */
class PendingCalls {
  private readonly list: (PendingToolCall | WorkingCall | undefined)[];
  private readonly byId = new Map<string, number[]>();
  /** Entries copied for a change since the fold began (frozen at `finish`). */
  private readonly copied = new Set<number>();
  private holes = 0;

  constructor(base: readonly PendingToolCall[]) {
    this.list = [...base];
    for (let i = 0; i < base.length; i++) this.index(base[i]!.callId, i);
  }

  private index(callId: string, at: number): void {
    const at0 = this.byId.get(callId);
    if (at0 === undefined) this.byId.set(callId, [at]);
    else at0.push(at);
  }

  add(call: WorkingCall): void {
    this.index(call.callId, this.list.length);
    this.copied.add(this.list.length);
    this.list.push(call);
  }

  update<K extends 'decision' | 'started'>(callId: string, key: K, value: WorkingCall[K]): void {
    const at = this.byId.get(callId)?.[0];
    if (at === undefined) return;
    if (!this.copied.has(at)) {
      this.list[at] = { ...this.list[at]! };
      this.copied.add(at);
    }
    (this.list[at] as WorkingCall)[key] = value;
  }

  remove(callId: string): void {
    const indexes = this.byId.get(callId);
    if (indexes === undefined) return;
    const at = indexes.shift()!;
    if (indexes.length === 0) this.byId.delete(callId);
    this.list[at] = undefined;
    this.holes++;
  }

  /** The frozen list, in call order. */
  finish(): readonly PendingToolCall[] {
    const out: PendingToolCall[] = this.holes === 0 ? (this.list.slice() as PendingToolCall[]) : [];
    if (this.holes > 0) for (const call of this.list) if (call !== undefined) out.push(call);
    for (const call of out) if (!Object.isFrozen(call)) Object.freeze(call);
    return Object.freeze(out);
  }
}

function isPendingType(type: string): boolean {
  return type === 'tool/call' || type === 'approval/decided' || type === 'tool/start' || type === 'tool/result';
}

/**
 * The reducer for a type: a core reducer, a plugin reducer, `null` for a type that never changes
 * the state (ignored core types, plugin types without a reducer, ignorable unknown records).
 * (The pending-call types are handled by the Folder before this is asked.)
 * @throws HarnessError `UNKNOWN_EVENT_TYPE` for an unknown type that is not ignorable.
 */
function reducerFor(event: AnySessionEvent): EventReducer | null {
  const type = event.type as string;
  const core = CORE_REDUCERS[type];
  if (core !== undefined) return core;
  if (type === 'assistant/chunk' || type === 'tool/output' || type === 'llm/retry' || type === 'request/snapshot' || type === 'plugin/reload') return null;
  const registration = eventTypeRegistration(type);
  if (registration !== undefined) return registration.reduce ?? null;
  if (event.ignorable === true) return null;
  throw new HarnessError(
    'UNKNOWN_EVENT_TYPE',
    `Unknown event type "${type}" (seq ${event.seq}): no loaded plugin registers it, and the record is not marked ignorable. Load the plugin that records it (add it to the config's plugins).`,
    { details: { type, seq: event.seq } },
  );
}

/**
 * One transition. Chunk-like and ignorable events return `state` itself (no immer on the hot path).
 * Folding many events is cheaper through one {@link Folder} (a transition copies the surface).
 * @throws HarnessError `UNKNOWN_EVENT_TYPE`, `INVALID_EVENT_DATA` (a bad `surface/replace`).
 */
export function reduceEvent(state: SessionState, event: AnySessionEvent): SessionState {
  const type = event.type;
  if (type === 'assistant/chunk' || type === 'tool/output' || type === 'llm/retry' || type === 'request/snapshot') return state;
  if (!isPendingType(type) && reducerFor(event) === null) return state;
  const folder = new Folder(state);
  folder.apply(event);
  return folder.finish();
}

/** A plugin reducer's surface: the next frozen array, built from the previous one. */
class CopyingSurface implements Surface {
  next: readonly Message[] | undefined;
  constructor(private readonly base: readonly Message[]) {}
  get length(): number {
    return (this.next ?? this.base).length;
  }
  get messages(): readonly Message[] {
    return this.next ?? this.base;
  }
  // Spread, not slice(): V8 copies a frozen array's elements kind with slice(), and appending to
  // or freezing that copy is two orders of magnitude slower.
  append(message: Message): void {
    this.next = Object.freeze([...(this.next ?? this.base), deepFreeze(message)]);
  }
  replace(start: number, end: number, messages: readonly Message[]): void {
    const from = this.next ?? this.base;
    this.next = Object.freeze([...from.slice(0, start), ...messages.map((m) => deepFreeze(m)), ...from.slice(end)]);
  }
}

/** Immer without auto-freeze: a plugin reducer's result over the working surface is frozen at `finish()`. */
const unfrozen = new Immer({ autoFreeze: false });

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Thrown by {@link WorkingSurfaceProbe} when a plugin reducer needs more of the surface than its length. */
const SURFACE_NEEDED = Symbol('surface needed');

/** The surface for a plugin reducer run over the working array: its length; anything else sends it to the finished path. */
class WorkingSurfaceProbe implements Surface {
  needed = false;
  constructor(private readonly working: readonly Message[]) {}
  get length(): number {
    return this.working.length;
  }
  get messages(): readonly Message[] {
    return this.need();
  }
  append(): void {
    this.need();
  }
  replace(): void {
    this.need();
  }
  // Remembered too: a reducer that catches what it calls still goes to the finished path.
  private need(): never {
    this.needed = true;
    throw SURFACE_NEEDED;
  }
}

/**
 * A fold in progress: one immer draft that many events are applied to, with the surface and the
 * pending calls as working structures beside it. Each event costs O(1) (apart from what it
 * carries); `finish()` returns the frozen state, in O(surface + pending calls) when something
 * changed since the last one, and applying more events afterwards starts a new draft from it.
 * A plugin reducer runs alone in its own `produce` after the work so far is finished, so it sees
 * the whole state and a throw from it changes nothing; one that leaves the surface alone runs over
 * the working surface, not a frozen copy of it (so the next append copies nothing).
 */
export class Folder implements Surface {
  private draft: MutableState | undefined;
  private base: SessionState;
  /** The working surface when changed since the last finish (not frozen yet). */
  private working: Message[] | undefined;
  /** Working messages from this index on may not be deep-frozen yet. */
  private freshFrom = 0;
  /** The frozen surface the working one was copied from. */
  private workingFrom: readonly Message[] | undefined;
  private pending: PendingCalls | undefined;
  /**
   * The seq of the last state-changing event since the last finish, written into the state once at
   * finish: a write to the immer draft per event goes through its proxy's set trap (~1 µs; four
   * per tool call, each call's records being appended one by one).
   */
  private seq: number | undefined;

  constructor(init: SessionState) {
    this.base = init;
  }

  /** Applies one event. @throws like {@link reduceEvent}. */
  apply(event: AnySessionEvent): void {
    const type = event.type;
    if (type === 'assistant/chunk' || type === 'tool/output' || type === 'llm/retry' || type === 'request/snapshot') return;
    const pendingReducer = PENDING_REDUCERS[type];
    if (pendingReducer !== undefined) {
      this.pending ??= new PendingCalls(this.base.pendingToolCalls);
      pendingReducer(this.pending, event, this);
      this.seq = event.seq;
      return;
    }
    const reducer = reducerFor(event);
    if (reducer === null) return;
    if (CORE_REDUCERS[type] !== reducer) {
      if (this.working === undefined || !this.reduceOnWorking(reducer, event)) this.reduceOnFinished(reducer, event);
      return;
    }
    this.draft ??= createDraft(this.base);
    reducer(this.draft, event, this);
    this.seq = event.seq;
  }

  /** A plugin reducer on the finished state: a surface it changes is the next frozen array (O(surface)). */
  private reduceOnFinished(reducer: EventReducer, event: AnySessionEvent): void {
    const state = this.finish();
    const surface = new CopyingSurface(state.messages);
    this.base = produce(state, (draft) => {
      reducer(draft, event, surface);
      if (surface.next !== undefined) draft.messages = surface.next as never;
      draft.lastSeq = event.seq;
    });
  }

  /**
   * A plugin reducer that leaves the surface alone, run without finishing the working surface: it
   * sees the whole state, the surface being the working array itself (read through its draft), and
   * the fold goes on appending to that array. Finishing it per plugin event made every later
   * append copy the surface: one plugin record per turn made a fold O(turns × surface) (20,000
   * turns: ~250 µs per turn, 100x a core turn). The state is frozen at the next `finish()`.
   * Returns false, having changed nothing, when the reducer uses `surface` beyond its length or
   * writes `draft.messages`: then it is run again by {@link reduceOnFinished}.
   */
  private reduceOnWorking(reducer: EventReducer, event: AnySessionEvent): boolean {
    const working = this.working!;
    if (this.draft !== undefined || this.pending !== undefined || this.seq !== undefined) {
      // The rest of the state finished (its surface is still the one the working array came from).
      const draft = this.draft ?? createDraft(this.base);
      if (this.pending !== undefined) draft.pendingToolCalls = this.pending.finish() as never;
      if (this.seq !== undefined) draft.lastSeq = this.seq;
      this.base = finishDraft(draft) as SessionState;
      this.draft = undefined;
      this.pending = undefined;
      this.seq = undefined;
    }
    const surface = new WorkingSurfaceProbe(working);
    let next: Mutable<SessionState>;
    try {
      next = unfrozen.produce({ ...this.base, messages: working } as SessionState, (draft) => {
        reducer(draft, event, surface);
        draft.lastSeq = event.seq;
      }) as Mutable<SessionState>;
    } catch (error) {
      if (error === SURFACE_NEEDED) return false;
      throw error;
    }
    if (surface.needed || next.messages !== working) return false;
    // Never the working array in the base: the default immer would freeze it with the state.
    next.messages = this.workingFrom!;
    this.base = next;
    return true;
  }

  get length(): number {
    return (this.working ?? this.base.messages).length;
  }

  /** The surface so far. */
  get messages(): readonly Message[] {
    return this.working ?? this.base.messages;
  }

  /** The surface length so far (cheap; used by the importer and repair). */
  get messageCount(): number {
    return this.length;
  }

  append(message: Message): void {
    if (this.working === undefined) this.startWorking();
    this.working!.push(message);
  }

  replace(start: number, end: number, messages: readonly Message[]): void {
    if (this.working === undefined) this.startWorking();
    this.working!.splice(start, end - start, ...messages);
    if (start < this.freshFrom) this.freshFrom = start;
  }

  // The draft never holds the surface (core reducers change it through this Surface; plugin
  // reducers run on a finished state), so the base's is the current one.
  private startWorking(): void {
    this.workingFrom = this.base.messages;
    this.working = [...this.workingFrom];
    this.freshFrom = this.working.length;
  }

  /** The state so far (frozen). */
  finish(): SessionState {
    if (this.draft !== undefined || this.working !== undefined || this.pending !== undefined || this.seq !== undefined) {
      const draft = this.draft ?? createDraft(this.base);
      if (this.seq !== undefined) draft.lastSeq = this.seq;
      if (this.working !== undefined) {
        const surface = freezeSurface(this.working, this.freshFrom);
        // Only appended to: what compares it with the surface before reads only the new messages.
        if (this.workingFrom !== undefined && this.freshFrom >= this.workingFrom.length) noteAppended(this.workingFrom, surface);
        draft.messages = surface as never;
      }
      if (this.pending !== undefined) draft.pendingToolCalls = this.pending.finish() as never;
      this.base = finishDraft(draft) as SessionState;
      this.draft = undefined;
      this.working = undefined;
      this.workingFrom = undefined;
      this.pending = undefined;
      this.seq = undefined;
    }
    return this.base;
  }
}

function freezeSurface(messages: Message[], freshFrom: number): readonly Message[] {
  for (let i = freshFrom; i < messages.length; i++) if (!Object.isFrozen(messages[i])) deepFreeze(messages[i]);
  return Object.freeze(messages);
}

/** Folds events (in seq order) onto `init` (default `initialState('')`; pass `initialState(id)` to name the session). */
export function foldEvents(events: Iterable<AnySessionEvent>, init?: SessionState): SessionState {
  const folder = new Folder(init ?? initialState(''));
  for (const event of events) folder.apply(event);
  return folder.finish();
}

/** Folds an async stream of events (e.g. `readJournal(path)`). */
export async function foldEventsAsync(events: AsyncIterable<AnySessionEvent>, init?: SessionState): Promise<SessionState> {
  const folder = new Folder(init ?? initialState(''));
  for await (const event of events) folder.apply(event);
  return folder.finish();
}

/** The state after the event with `seq` (the fold of every event with `seq <= seq`). */
export function stateAt(events: Iterable<AnySessionEvent>, seq: number, init?: SessionState): SessionState {
  const folder = new Folder(init ?? initialState(''));
  for (const event of events) {
    if (event.seq > seq) break;
    folder.apply(event);
  }
  return folder.finish();
}
