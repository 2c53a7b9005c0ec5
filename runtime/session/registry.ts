/**
 * Event types (DESIGN "Sessions and the journal": plugins add their own types; a reader refuses an
 * unknown type unless the record says `"ignorable": true`).
 *
 * The core types are built in. A plugin registers a type of its own with {@link registerEventType}
 * (and declares its data shape by declaration merging on `SessionEventMap`):
 *
 * ```ts
 * declare module '../../runtime/index.ts' {
 *   interface SessionEventMap { 'todo/write': { readonly todos: readonly Todo[] } }
 * }
 * ctx.onDispose(registerEventType('todo/write', { ignorable: true, reduce: (draft, event) => { … } }));
 * ```
 */
import type { Draft } from 'immer';
import type { Disposer } from '../kernel/bus.ts';
import { HarnessError } from '../kernel/errors.ts';
import type { Message } from '../llm/types.ts';
import type { AnySessionEvent } from './events.ts';
import type { SessionState } from './types.ts';

/**
 * The surface as a reducer changes it. Use it rather than `draft.messages` (which works, but makes
 * immer track every element of a long surface).
 */
export interface Surface {
  readonly length: number;
  readonly messages: readonly Message[];
  /** Appends a message (it is deep-frozen). */
  append(message: Message): void;
  /** Replaces the messages `[start, end)` with `messages`. */
  replace(start: number, end: number, messages: readonly Message[]): void;
}

/** Mutates an immer draft of the state for one event (run inside `produce`); the surface beside it. */
export type EventReducer = (draft: Draft<SessionState>, event: AnySessionEvent, surface: Surface) => void;

/** How `registerEventType(type, options)` treats a plugin's event type. */
export interface EventTypeOptions {
  /** How the type changes the state; without it, the type is known but does not touch the state. */
  readonly reduce?: EventReducer;
  /** Records of this type are written with `"ignorable": true` unless `append` says otherwise. */
  readonly ignorable?: boolean;
}

interface Registration extends EventTypeOptions {
  readonly type: string;
}

/** Core types: folded by `fold.ts`. Not re-registrable. */
export const CORE_EVENT_TYPES: ReadonlySet<string> = new Set([
  'turn/start',
  'turn/end',
  'step/start',
  'step/end',
  'user/message',
  'request/header',
  'request/snapshot',
  'assistant/chunk',
  'assistant/message',
  'tool/call',
  'approval/decided',
  'tool/start',
  'tool/output',
  'tool/result',
  'llm/retry',
  'surface/replace',
  'compaction/start',
  'compaction/summary',
  'compaction/end',
  'session/title',
  'plugin/reload',
]);

/** Core types written `ignorable` by default (a reader may skip them). */
const CORE_IGNORABLE: ReadonlySet<string> = new Set(['tool/output', 'request/snapshot', 'plugin/reload']);

const registered = new Map<string, Registration>();

/**
 * Registers a plugin event type. Returns the disposer (hand it to `ctx.onDispose`).
 * @throws HarnessError `INVALID_EVENT_TYPE` for a name not shaped `area/action`,
 *   `DUPLICATE_EVENT_TYPE` for a core type or a type already registered.
 */
export function registerEventType(type: string, options: EventTypeOptions = {}): Disposer {
  if (typeof type !== 'string' || !/^[a-z0-9-]+(\/[a-z0-9-]+)+$/i.test(type)) {
    throw new HarnessError('INVALID_EVENT_TYPE', `Event type ${JSON.stringify(type)} must look like "area/action".`);
  }
  if (CORE_EVENT_TYPES.has(type) || registered.has(type)) {
    throw new HarnessError('DUPLICATE_EVENT_TYPE', `Event type "${type}" is ${CORE_EVENT_TYPES.has(type) ? 'a core type' : 'already registered'}; pick another name.`);
  }
  if (options.reduce !== undefined && typeof options.reduce !== 'function') {
    throw new HarnessError('INVALID_EVENT_TYPE', `The reducer of event type "${type}" must be a function (draft, event) => void.`);
  }
  const registration: Registration = Object.freeze({ type, ...options });
  registered.set(type, registration);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    if (registered.get(type) === registration) registered.delete(type);
  };
}

/** The registration of a plugin type, if any. */
export function eventTypeRegistration(type: string): EventTypeOptions | undefined {
  return registered.get(type);
}

/** True for a core type or a registered plugin type. */
export function isKnownEventType(type: string): boolean {
  return CORE_EVENT_TYPES.has(type) || registered.has(type);
}

/** Whether `append` marks a record of this type ignorable when the caller does not say. */
export function isIgnorableByDefault(type: string): boolean {
  return CORE_IGNORABLE.has(type) || registered.get(type)?.ignorable === true;
}
