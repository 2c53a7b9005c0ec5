/**
 * The hook bus (DESIGN "The kernel", seed 003 "Observer vs AsyncSink").
 *
 * Hooks are named `area/action`, typed by declaration merging on {@link HookMap}, and each has one
 * mode, declared at run time with {@link HookBus.declare}:
 * - `waterfall`: onion middleware `(payload, next) => result`, built on tapable;
 * - `emit`: observers on eventemitter3 — not awaited, failures contained and reported on
 *   `kernel/diagnostic`;
 * - `sink`: ordered, awaited delivery; a failure propagates to the caller of `deliver`.
 *
 * The bus keeps its own tap lists (tapable cannot remove a tap). After a change it builds a fresh
 * tapable hook and composes the chain with it, lazily at the next dispatch; the chain is swapped in
 * one synchronous step. A dispatch takes the chain current when it starts and keeps it to the end,
 * so a change made while it runs never mixes two tap lists inside one dispatch.
 */
import { EventEmitter } from 'eventemitter3';
import tapable from 'tapable';
import { HarnessError } from './errors.ts';

const { SyncWaterfallHook } = tapable;

/** A waterfall hook: payload `P` in, result `R` out (R may be a Promise or an AsyncIterable). */
export interface WaterfallHook<P, R> {
  readonly mode: 'waterfall';
  readonly payload: P;
  readonly result: R;
}
/** An observed event: listeners are not awaited and cannot affect the emitter. */
export interface EmitHook<E> {
  readonly mode: 'emit';
  readonly event: E;
}
/** A delivered event: listeners run in order, each awaited; a failure reaches the emitter. */
export interface SinkHook<E> {
  readonly mode: 'sink';
  readonly event: E;
}
/** How a hook delivers: `waterfall` (onion middleware), `emit` (contained observers), `sink` (ordered, awaited). */
export type HookMode = 'waterfall' | 'emit' | 'sink';

/** `kernel/diagnostic` payload: something went wrong that must not stop the caller. */
export interface Diagnostic {
  readonly level: 'error' | 'warning' | 'info';
  /** Stable UPPER_SNAKE code, e.g. `OBSERVER_FAILED`, `DISPOSER_FAILED`, `INVALID_REPLAY_STATE`. */
  readonly code: string;
  readonly message: string;
  /** Who reported it: a hook name, a plugin name, `kernel`. */
  readonly source: string;
  readonly error?: unknown;
}

declare global {
  /** Extension points for plugins: merge into these from anywhere with `declare global { namespace Harness { … } }`. */
  namespace Harness {
    /**
     * Hooks added by plugins:
     * ```ts
     * declare global {
     *   namespace Harness {
     *     interface HookMap { 'log/line': import('harness-runtime').EmitHook<{ text: string }> }
     *   }
     * }
     * ```
     */
    interface HookMap {}
  }
}

/** The hook registry: the runtime's own hooks (merged into this module) plus `Harness.HookMap`. */
export interface HookMap extends Harness.HookMap {
  'kernel/diagnostic': EmitHook<Diagnostic>;
}

/** Every declared hook name (`area/action`), core and merged into {@link HookMap}. */
export type HookName = keyof HookMap & string;
type NamesOf<Mode extends HookMode> = {
  [K in HookName]: HookMap[K] extends { mode: Mode } ? K : never;
}[HookName];
/** The names of the `waterfall` hooks in {@link HookMap}. */
export type WaterfallName = NamesOf<'waterfall'>;
/** The names of the `emit` hooks in {@link HookMap}. */
export type EmitName = NamesOf<'emit'>;
/** The names of the `sink` hooks in {@link HookMap}. */
export type SinkName = NamesOf<'sink'>;

/** The payload a waterfall hook's listeners receive (and may replace through `next(payload)`). */
export type PayloadOf<K extends WaterfallName> = HookMap[K] extends WaterfallHook<infer P, any> ? P : never;
/** What a waterfall hook's chain returns to the dispatch site. */
export type ResultOf<K extends WaterfallName> = HookMap[K] extends WaterfallHook<any, infer R> ? R : never;
/** The event an `emit` or `sink` hook delivers. */
export type EventOf<K extends EmitName | SinkName> = HookMap[K] extends EmitHook<infer E> | SinkHook<infer E> ? E : never;

/** Calls the rest of the chain; with no argument it passes on the payload this middleware received. */
export type Next<P, R> = (payload?: P) => R;
/** A waterfall middleware: call `next()` to run the rest of the chain, or return without it to replace the result (throw to veto). */
export type WaterfallListener<P, R> = (payload: P, next: Next<P, R>) => R;
/** An `emit` observer (not awaited; a throw is reported on `kernel/diagnostic`) or a `sink` (awaited in order; a throw reaches the emitter). */
export type EventListener<E> = (event: E) => void | Promise<void>;

/** The listener type `ctx.on(name, listener)` takes for hook `K`. */
export type ListenerOf<K extends HookName> =
  HookMap[K] extends WaterfallHook<infer P, infer R> ? WaterfallListener<P, R> : HookMap[K] extends EmitHook<infer E> | SinkHook<infer E> ? EventListener<E> : never;

/** Options of `ctx.on`. */
export interface ListenOptions {
  /** Lower runs first (outermost for waterfalls). Default 0; ties keep registration order. */
  stage?: number;
}

/** Undoes one registration; calling it again does nothing. */
export type Disposer = () => void;

interface Tap {
  readonly fn: (...args: any[]) => any;
  readonly stage: number;
  readonly order: number;
  readonly owner: string;
}

interface WaterfallState {
  taps: readonly Tap[];
  /** Built lazily from `taps`; null after a change. */
  chain: Chain | null;
}

let tapOrder = 0;

export class HookBus {
  private readonly modes = new Map<string, HookMode>();
  private readonly waterfalls = new Map<string, WaterfallState>();
  private readonly sinks = new Map<string, readonly Tap[]>();
  private readonly emitter = new EventEmitter();
  private readonly observers = new Map<string, Tap[]>();

  constructor() {
    this.declare('kernel/diagnostic', 'emit');
  }

  /**
   * Declares a hook's mode. Idempotent for the same mode.
   * @throws HarnessError `HOOK_MODE_CONFLICT` when the name is already declared with another mode.
   */
  declare(name: string, mode: HookMode): void {
    const current = this.modes.get(name);
    if (current === undefined) {
      if (!/^[a-z0-9-]+(\/[a-z0-9-]+)+$/i.test(name)) {
        throw new HarnessError('INVALID_HOOK_NAME', `Hook name "${name}" must look like "area/action".`);
      }
      this.modes.set(name, mode);
    } else if (current !== mode) {
      throw new HarnessError('HOOK_MODE_CONFLICT', `Hook "${name}" is already declared as ${current}; it cannot also be ${mode}. Pick another name.`);
    }
  }

  modeOf(name: string): HookMode | undefined {
    return this.modes.get(name);
  }

  /** @throws HarnessError `UNKNOWN_HOOK` when the hook was never declared. */
  requireMode(name: string): HookMode {
    const mode = this.modes.get(name);
    if (mode === undefined) {
      throw new HarnessError('UNKNOWN_HOOK', `Hook "${name}" is not declared. Declare it first with ctx.declareHook("${name}", "waterfall" | "emit" | "sink").`);
    }
    return mode;
  }

  /** @throws HarnessError `UNKNOWN_HOOK`, or `HOOK_MODE_CONFLICT` when the hook has another mode. */
  private requireModeFor(name: string, expected: HookMode): void {
    const mode = this.requireMode(name);
    if (mode !== expected) {
      throw new HarnessError('HOOK_MODE_CONFLICT', `Hook "${name}" is declared as ${mode}; it cannot be used as ${expected === 'emit' ? 'an emit' : `a ${expected}`} hook.`);
    }
  }

  /**
   * Reserves a place in registration order. Listeners added with it as their `order` sort (within
   * their stage) where a listener added now would, and among themselves in the order they were
   * added: a plugin keeps its place across reloads this way.
   */
  reserveOrder(): number {
    return tapOrder++;
  }

  /**
   * Adds a listener now (no staging: plugin scopes stage and call this at commit). Returns its undo.
   * `order` (from {@link reserveOrder}) places it in registration order; default: now.
   * @throws HarnessError `UNKNOWN_HOOK`.
   */
  add(name: string, fn: (...args: any[]) => any, options: ListenOptions & { owner?: string; order?: number } = {}): Disposer {
    const mode = this.requireMode(name);
    if (typeof fn !== 'function') {
      throw new HarnessError('INVALID_LISTENER', `The listener for "${name}" must be a function.`);
    }
    if (options.stage !== undefined && !Number.isFinite(options.stage)) {
      throw new HarnessError('INVALID_LISTENER', `The stage of a listener for "${name}" must be a finite number; got ${String(options.stage)}.`);
    }
    const tap: Tap = { fn, stage: options.stage ?? 0, order: options.order ?? tapOrder++, owner: options.owner ?? 'anonymous' };
    if (mode === 'waterfall') {
      const state = this.waterfalls.get(name) ?? { taps: [], chain: null };
      state.taps = sortTaps([...state.taps, tap]);
      state.chain = null;
      this.waterfalls.set(name, state);
      return once(() => {
        state.taps = state.taps.filter((t) => t !== tap);
        state.chain = null;
      });
    }
    if (mode === 'sink') {
      this.sinks.set(name, sortTaps([...(this.sinks.get(name) ?? []), tap]));
      return once(() => {
        this.sinks.set(
          name,
          (this.sinks.get(name) ?? []).filter((t) => t !== tap),
        );
      });
    }
    const contained = this.containObserver(name, tap);
    const list = this.observers.get(name) ?? [];
    list.push(tap);
    this.observers.set(name, list);
    // Re-adding everything keeps eventemitter3's call order equal to stage order.
    this.reorderObservers(name);
    return once(() => {
      this.emitter.removeListener(name, contained as never);
      const current = this.observers.get(name) ?? [];
      const at = current.indexOf(tap);
      if (at >= 0) current.splice(at, 1);
      observerWrappers.delete(tap);
    });
  }

  /**
   * Dispatches a waterfall: listeners run outermost (lowest stage) first; `inner` is the behaviour at
   * the centre. With no listener, `inner(payload)` is called directly.
   */
  waterfall<K extends WaterfallName>(name: K, payload: PayloadOf<K>, inner: (payload: PayloadOf<K>) => ResultOf<K>): ResultOf<K>;
  waterfall(name: string, payload: unknown, inner: (payload: unknown) => unknown): unknown;
  waterfall(name: string, payload: unknown, inner: (payload: unknown) => unknown): unknown {
    const state = this.waterfalls.get(name);
    if (state === undefined || state.taps.length === 0) {
      this.requireModeFor(name, 'waterfall');
      return inner(payload);
    }
    state.chain ??= buildChain(state.taps);
    const chain = state.chain;
    return chain(payload, inner);
  }

  /** Emits to observers. Never throws because of an observer; never waits for one. */
  emit<K extends EmitName>(name: K, event: EventOf<K>): void;
  emit(name: string, event: unknown): void;
  emit(name: string, event: unknown): void {
    if (this.modes.get(name) !== 'emit') this.requireModeFor(name, 'emit');
    this.emitter.emit(name, event);
  }

  /**
   * Delivers to sinks in order, awaiting each. Returns undefined when every sink completed
   * synchronously (no promise is made on the hot path), otherwise a promise. A failure propagates.
   */
  deliver<K extends SinkName>(name: K, event: EventOf<K>): void | Promise<void>;
  deliver(name: string, event: unknown): void | Promise<void>;
  deliver(name: string, event: unknown): void | Promise<void> {
    const list = this.sinks.get(name);
    if (list === undefined) {
      this.requireModeFor(name, 'sink');
      return;
    }
    for (let i = 0; i < list.length; i++) {
      const result = list[i]!.fn(event);
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        return continueDelivery(list, i + 1, result as Promise<void>, event);
      }
    }
  }

  /**
   * True when a sink hook has at least one listener: lets a hot-path emitter skip building its
   * event when nobody listens (one record per stream chunk goes through `session/event`).
   */
  hasSinks(name: string): boolean {
    const list = this.sinks.get(name);
    return list !== undefined && list.length > 0;
  }

  /** Number of listeners on a hook (all hooks when no name): used by tests and `harness` listings. */
  count(name?: string): number {
    if (name !== undefined) {
      return (this.waterfalls.get(name)?.taps.length ?? 0) + (this.sinks.get(name)?.length ?? 0) + (this.observers.get(name)?.length ?? 0);
    }
    let total = 0;
    for (const key of this.modes.keys()) total += this.count(key);
    return total;
  }

  /** Declared hooks with their mode and listener owners, in declaration order. */
  describe(): { name: string; mode: HookMode; owners: string[] }[] {
    return [...this.modes].map(([name, mode]) => ({
      name,
      mode,
      owners: [...(this.waterfalls.get(name)?.taps ?? []), ...(this.sinks.get(name) ?? []), ...(this.observers.get(name) ?? [])].map((t) => t.owner),
    }));
  }

  /** Reports a contained failure on `kernel/diagnostic`; a failing diagnostic observer goes to stderr. */
  report(diagnostic: Diagnostic): void {
    if (this.emitter.listenerCount('kernel/diagnostic') === 0) {
      if (diagnostic.level !== 'info') process.emitWarning(`${diagnostic.code}: ${diagnostic.message}`, { code: diagnostic.code });
      return;
    }
    this.emitter.emit('kernel/diagnostic', diagnostic);
  }

  private containObserver(name: string, tap: Tap): (event: unknown) => void {
    const fail = (error: unknown) => {
      if (name === 'kernel/diagnostic') {
        console.error(`[harness] a kernel/diagnostic observer (${tap.owner}) failed:`, error);
        return;
      }
      this.report({
        level: 'error',
        code: 'OBSERVER_FAILED',
        source: name,
        message: `An observer of "${name}" (${tap.owner}) failed: ${error instanceof Error ? error.message : String(error)}`,
        error,
      });
    };
    const wrapper = (event: unknown) => {
      try {
        const result = tap.fn(event);
        if (result !== undefined && typeof result?.then === 'function') (result as Promise<unknown>).then(undefined, fail);
      } catch (error) {
        fail(error);
      }
    };
    observerWrappers.set(tap, wrapper);
    return wrapper;
  }

  private reorderObservers(name: string): void {
    const list = sortTaps(this.observers.get(name) ?? []);
    this.observers.set(name, list);
    this.emitter.removeAllListeners(name);
    for (const tap of list) this.emitter.on(name, observerWrappers.get(tap)! as never);
  }
}

const observerWrappers = new WeakMap<Tap, (event: unknown) => void>();

async function continueDelivery(list: readonly Tap[], from: number, pending: Promise<void>, event: unknown): Promise<void> {
  await pending;
  for (let i = from; i < list.length; i++) await list[i]!.fn(event);
}

function sortTaps(taps: readonly Tap[]): Tap[] {
  return [...taps].sort((a, b) => a.stage - b.stage || a.order - b.order);
}

/**
 * Builds the chain with a tapable SyncWaterfallHook: its value is the downstream chain, and each tap
 * wraps the chain below it in one more layer. Taps are added innermost first so that the lowest
 * stage ends outermost.
 *
 * Built once per tap-list change, not per dispatch: a dispatch then only makes the one `next`
 * closure per layer that any `next(payload?)` chain needs, bound to that layer's own downstream
 * (so calling it twice runs the downstream chain twice), and the chain it starts with is immutable
 * (a change while it runs cannot mix two tap lists into it).
 *
 * Each layer of a chain is its own function (generated for the chain, as tapable generates its own
 * `call`): every call site in it then only ever sees that layer's listener and downstream, so V8 can
 * inline the chain as it would hand-nested closures. One shared layer function would see every
 * listener of every hook and stay megamorphic (bench/bus.ts: ~10x slower at 10 middlewares).
 */
function buildChain(taps: readonly Tap[]): Chain {
  const makeLayers = layerFactories(taps.length);
  const hook = new SyncWaterfallHook<[Chain]>(['downstream']);
  for (let i = taps.length - 1; i >= 0; i--) {
    const listener = taps[i]!.fn;
    const makeLayer = makeLayers[i]!;
    hook.tap({ name: taps[i]!.owner }, (downstream) => makeLayer(listener, downstream));
  }
  return hook.call(innermost) as Chain;
}

/** A composed chain: the payload in, `inner` at the centre. */
type Chain = (payload: unknown, inner: (payload: unknown) => unknown) => unknown;
type LayerFactory = (listener: (...args: any[]) => any, downstream: Chain) => Chain;

const innermost: Chain = (payload, inner) => inner(payload);

/** `count` fresh layer factories (new functions, so their call-site feedback is their own). */
function layerFactories(count: number): LayerFactory[] {
  let source = '';
  for (let k = 0; k < count; k++) {
    source += `function layer${k}(listener, downstream) {
  return function (payload, inner) {
    return listener(payload, (replacement) => downstream(replacement === undefined ? payload : replacement, inner));
  };
}
`;
  }
  const names = Array.from({ length: count }, (_, k) => `layer${k}`).join(', ');
  // eslint-disable-next-line no-new-func
  return new Function(`'use strict';\n${source}return [${names}];`)() as LayerFactory[];
}

function once(fn: () => void): Disposer {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
