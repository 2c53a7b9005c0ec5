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
 * The hot path: `assistant/chunk`, `tool/output` and `llm/retry` do not change the state, and an
 * ignorable record of an unknown type is skipped; for those `reduceEvent` returns the very same
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
import { createDraft, current, finishDraft, isDraft, produce, type Draft } from 'immer';
import { HarnessError } from '../kernel/errors.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import type { Message, TokenUsage } from '../llm/types.ts';
import type { AnySessionEvent, SessionEvent, SessionEventMap } from './events.ts';
import { eventTypeRegistration, type EventReducer, type Surface } from './registry.ts';
import type { SessionState } from './types.ts';

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

function findPending(draft: MutableState, callId: string): number {
  const pending = draft.pendingToolCalls;
  for (let i = 0; i < pending.length; i++) if (pending[i]!.callId === callId) return i;
  return -1;
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
  'tool/call'(draft, event) {
    const { callId, name, arguments: args, turn, step } = data<'tool/call'>(event);
    draft.pendingToolCalls.push({ callId, name, arguments: args, turn, step, started: false });
  },
  'approval/decided'(draft, event) {
    const { callId, decision } = data<'approval/decided'>(event);
    const at = findPending(draft, callId);
    if (at >= 0) draft.pendingToolCalls[at]!.decision = decision;
  },
  'tool/start'(draft, event) {
    const at = findPending(draft, data<'tool/start'>(event).callId);
    if (at >= 0) draft.pendingToolCalls[at]!.started = true;
  },
  'tool/result'(draft, event, surface) {
    const value = data<'tool/result'>(event);
    surface.append(value.message);
    const at = findPending(draft, value.callId);
    if (at >= 0) draft.pendingToolCalls.splice(at, 1);
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

/**
 * The reducer for a type: a core reducer, a plugin reducer, `null` for a type that never changes
 * the state (ignored core types, plugin types without a reducer, ignorable unknown records).
 * @throws HarnessError `UNKNOWN_EVENT_TYPE` for an unknown type that is not ignorable.
 */
function reducerFor(event: AnySessionEvent): EventReducer | null {
  const type = event.type as string;
  const core = CORE_REDUCERS[type];
  if (core !== undefined) return core;
  if (type === 'assistant/chunk' || type === 'tool/output' || type === 'llm/retry' || type === 'request/snapshot') return null;
  const registration = eventTypeRegistration(type);
  if (registration !== undefined) return registration.reduce ?? null;
  if (event.ignorable === true) return null;
  throw new HarnessError(
    'UNKNOWN_EVENT_TYPE',
    `Unknown event type "${type}" (seq ${event.seq}) is not marked ignorable. Load the plugin that registers it (registerEventType), or append it with { ignorable: true }.`,
    { details: { type, seq: event.seq } },
  );
}

/**
 * One transition. Chunk-like and ignorable events return `state` itself (no immer on the hot path).
 * @throws HarnessError `UNKNOWN_EVENT_TYPE`, `INVALID_EVENT_DATA` (a bad `surface/replace`).
 */
export function reduceEvent(state: SessionState, event: AnySessionEvent): SessionState {
  const type = event.type;
  if (type === 'assistant/chunk' || type === 'tool/output' || type === 'llm/retry' || type === 'request/snapshot') return state;
  const reducer = reducerFor(event);
  if (reducer === null) return state;
  const surface = new CopyingSurface(state.messages);
  return produce(state, (draft) => {
    reducer(draft, event, surface);
    if (surface.next !== undefined) draft.messages = surface.next as never;
    draft.lastSeq = event.seq;
  });
}

/** One transition's surface: the next frozen array, built from the previous one. */
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

/**
 * A fold in progress: one immer draft that many events are applied to (the surface is one working
 * array beside it). `finish()` returns the frozen state; applying more events afterwards starts a
 * new draft from it.
 */
export class Folder implements Surface {
  private draft: MutableState | undefined;
  private base: SessionState;
  /** The working surface when changed since the last finish (not frozen yet). */
  private working: Message[] | undefined;

  constructor(init: SessionState) {
    this.base = init;
  }

  /** Applies one event. @throws like {@link reduceEvent}. */
  apply(event: AnySessionEvent): void {
    const type = event.type;
    if (type === 'assistant/chunk' || type === 'tool/output' || type === 'llm/retry' || type === 'request/snapshot') return;
    const reducer = reducerFor(event);
    if (reducer === null) return;
    // A plugin reducer may read or change `draft.messages`: commit the working surface first, so
    // the draft holds it (drafted by immer on access); later surface changes start from it.
    if (CORE_REDUCERS[type] !== reducer && this.working !== undefined) this.finish();
    this.draft ??= createDraft(this.base);
    const draft = this.draft;
    reducer(draft, event, this);
    draft.lastSeq = event.seq;
  }

  get length(): number {
    return (this.working ?? this.currentMessages()).length;
  }

  /** The surface so far. */
  get messages(): readonly Message[] {
    return this.working ?? this.currentMessages();
  }

  /** The surface length so far (cheap; used by the importer and repair). */
  get messageCount(): number {
    return this.length;
  }

  append(message: Message): void {
    this.working ??= [...this.currentMessages()];
    this.working.push(message);
  }

  replace(start: number, end: number, messages: readonly Message[]): void {
    this.working ??= [...this.currentMessages()];
    this.working.splice(start, end - start, ...messages);
  }

  private currentMessages(): readonly Message[] {
    if (this.draft === undefined) return this.base.messages;
    const messages = this.draft.messages as unknown;
    return (isDraft(messages) ? current(messages) : messages) as readonly Message[];
  }

  /** The state so far (frozen). */
  finish(): SessionState {
    if (this.draft !== undefined || this.working !== undefined) {
      const draft = this.draft ?? createDraft(this.base);
      if (this.working !== undefined) draft.messages = freezeSurface(this.working) as never;
      this.base = finishDraft(draft) as SessionState;
      this.draft = undefined;
      this.working = undefined;
    }
    return this.base;
  }
}

function freezeSurface(messages: Message[]): readonly Message[] {
  for (let i = 0; i < messages.length; i++) if (!Object.isFrozen(messages[i])) deepFreeze(messages[i]);
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
