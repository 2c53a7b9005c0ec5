/**
 * Fibers and scopes: who owns an effect, and when it is undone (DESIGN "The kernel").
 *
 * A {@link Fiber} owns disposers. Disposing runs each once, in reverse order; a failing disposer is
 * reported and the rest still run; a dispose that arrives during setup waits for setup; once disposal
 * has started, a new effect is refused (its disposer runs at once, so nothing leaks).
 *
 * A {@link Scope} adds staging on top of a fiber: registrations (hook listeners, adapter routes,
 * tools, services) made while the scope is staged are invisible until {@link Scope.commit}, which
 * validates them all and then applies them all in one synchronous step. {@link Scope.detach} and
 * {@link Scope.reattach} let a hot reload swap one scope's registrations for another's atomically.
 */
import type { Diagnostic, Disposer } from './bus.ts';
import { HarnessError } from './errors.ts';

type DisposerFn = () => unknown;

export class Fiber {
  readonly name: string;
  private readonly disposers: { fn: DisposerFn; done: boolean }[] = [];
  private readonly controller = new AbortController();
  /** Setups started with {@link run} that have not settled yet. */
  private readonly setups = new Set<Promise<unknown>>();
  private disposal: Promise<void> | null = null;
  /** True once disposal has started running disposers (after any running setup settled). */
  private started = false;
  /** Set on a child fiber: forgets it in its parent once it has been disposed on its own. */
  private detachFromParent: (() => void) | null = null;
  private readonly report: (diagnostic: Diagnostic) => void;

  constructor(name: string, report: (diagnostic: Diagnostic) => void) {
    this.name = name;
    this.report = report;
  }

  /** Aborted when disposal starts: long-running work owned by the fiber can stop on it. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** True once {@link dispose} was called (disposal may still be waiting for a running setup). */
  get disposing(): boolean {
    return this.disposal !== null;
  }

  /** True once disposal has started running disposers: from then on, new effects are refused. */
  get closed(): boolean {
    return this.started;
  }

  /**
   * Adds an effect's disposer. Returns a disposer that undoes the effect early (once).
   * While a setup runs, effects are accepted even if a dispose was requested meanwhile (the dispose
   * waits for the setup, then undoes them).
   * @throws HarnessError `FIBER_DISPOSED` once disposal has started (the disposer has then already run).
   */
  add(fn: DisposerFn): Disposer {
    if (this.started) {
      this.runOne(fn);
      throw new HarnessError('FIBER_DISPOSED', `"${this.name}" is being disposed; it takes no new effects.`);
    }
    const entry = { fn, done: false };
    this.disposers.push(entry);
    return () => {
      if (entry.done) return;
      entry.done = true;
      const at = this.disposers.indexOf(entry);
      if (at >= 0) this.disposers.splice(at, 1);
      this.runOne(fn);
    };
  }

  /** Runs `setup` as this fiber's setup; a dispose arriving meanwhile waits for it. */
  run<T>(setup: () => T | Promise<T>): Promise<T> {
    const promise = Promise.resolve().then(setup);
    const settled = promise.then(
      () => undefined,
      () => undefined,
    );
    this.setups.add(settled);
    void settled.then(() => this.setups.delete(settled));
    return promise;
  }

  /**
   * A child fiber, disposed with this one (before the effects added earlier, as it was added
   * later). A child disposed on its own is forgotten by its parent.
   */
  child(name: string): Fiber {
    const child = new Fiber(`${this.name}/${name}`, this.report);
    child.detachFromParent = this.add(() => child.dispose());
    return child;
  }

  /** Runs every disposer once, in reverse order. Idempotent: a second call returns the same promise. */
  dispose(): Promise<void> {
    if (this.disposal !== null) return this.disposal;
    this.controller.abort(new HarnessError('FIBER_DISPOSED', `"${this.name}" was disposed.`));
    this.disposal = (async () => {
      // A dispose during setup waits for it: what the setup adds meanwhile is then undone too.
      while (this.setups.size > 0) await Promise.all([...this.setups]);
      this.started = true;
      while (this.disposers.length > 0) {
        const entry = this.disposers.pop()!;
        if (entry.done) continue;
        entry.done = true;
        await this.runOne(entry.fn);
      }
      const detach = this.detachFromParent;
      this.detachFromParent = null;
      detach?.();
    })();
    return this.disposal;
  }

  private runOne(fn: DisposerFn): void | Promise<void> {
    const fail = (error: unknown) =>
      this.report({
        level: 'error',
        code: 'DISPOSER_FAILED',
        source: this.name,
        message: `A disposer of "${this.name}" failed: ${error instanceof Error ? error.message : String(error)}`,
        error,
      });
    try {
      const result = fn();
      if (result !== undefined && typeof (result as Promise<unknown>)?.then === 'function') {
        return (result as Promise<unknown>).then(() => undefined, fail);
      }
    } catch (error) {
      fail(error);
    }
  }
}

/**
 * A synchronous, re-appliable registration. `validate` throws if applying would be refused (e.g. a
 * route already taken); `apply` makes it visible and returns its undo (and may throw for the same
 * reasons). Neither may await. At `'register'` time a conflict with a registration of the same owner
 * is not an error — a reload's new generation is staged while the old one still serves, and the swap
 * replaces it; at `'commit'` time the old generation is already detached, so every conflict counts.
 */
export interface Registration {
  validate?(phase: 'register' | 'commit'): void;
  apply(): () => void;
  /** Awaited when the owning fiber disposes, after the undo: e.g. wait for in-flight calls to end. */
  drain?(): Promise<void>;
}

interface Entry {
  readonly registration: Registration;
  undo: (() => void) | null;
  removed: boolean;
}

export class Scope {
  readonly fiber: Fiber;
  private staged = true;
  private readonly entries: Entry[] = [];

  constructor(fiber: Fiber, options: { staged?: boolean } = {}) {
    this.fiber = fiber;
    this.staged = options.staged ?? true;
  }

  get isStaged(): boolean {
    return this.staged;
  }

  /**
   * Registers now if the scope is committed, or stages it until {@link commit}. `validate` runs now
   * either way, so a refused registration fails at the call that made it.
   */
  register(registration: Registration): Disposer {
    if (this.fiber.closed) {
      throw new HarnessError('FIBER_DISPOSED', `"${this.fiber.name}" is being disposed; it takes no new registrations.`);
    }
    registration.validate?.(this.staged ? 'register' : 'commit');
    const entry: Entry = { registration, undo: null, removed: false };
    if (!this.staged) entry.undo = registration.apply();
    this.entries.push(entry);
    const remove = () => {
      if (entry.removed) return;
      entry.removed = true;
      const at = this.entries.indexOf(entry);
      if (at >= 0) this.entries.splice(at, 1);
      const undo = entry.undo;
      entry.undo = null;
      undo?.();
    };
    return this.fiber.add(() => {
      remove();
      return registration.drain?.();
    });
  }

  /**
   * Makes every staged registration visible in one synchronous step: all are validated first; if
   * any is refused, none is applied and the error is thrown.
   */
  commit(): void {
    if (!this.staged) return;
    for (const entry of this.entries) entry.registration.validate?.('commit');
    this.applyAll();
    this.staged = false;
  }

  /** Undoes every applied registration (synchronously) without forgetting it, for a swap. */
  detach(): void {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i]!;
      const undo = entry.undo;
      entry.undo = null;
      undo?.();
    }
    this.staged = true;
  }

  /** Applies again what {@link detach} undid (a swap that failed puts the old generation back). */
  reattach(): void {
    this.applyAll();
    this.staged = false;
  }

  private applyAll(): void {
    const applied: Entry[] = [];
    try {
      for (const entry of this.entries) {
        if (entry.undo === null) {
          entry.undo = entry.registration.apply();
          applied.push(entry);
        }
      }
    } catch (error) {
      for (const entry of applied.reverse()) {
        const undo = entry.undo;
        entry.undo = null;
        undo?.();
      }
      throw error;
    }
  }
}
