/**
 * The context a plugin receives (DESIGN "The kernel"): a view of the bus and of the shared services,
 * in which every registration is an effect of the plugin's scope — staged during setup, undone on
 * unload or reload.
 */
import {
  HookBus,
  type Diagnostic,
  type Disposer,
  type EmitName,
  type EventOf,
  type HookMode,
  type HookName,
  type ListenOptions,
  type ListenerOf,
  type PayloadOf,
  type ResultOf,
  type SinkName,
  type WaterfallName,
} from './bus.ts';
import { HarnessError } from './errors.ts';
import type { Scope } from './fiber.ts';

declare global {
  namespace Harness {
    /**
     * Shared services published by plugins with `ctx.provide(name, value)`; declare yours here
     * (optional, since the providing plugin may not be loaded):
     * `declare global { namespace Harness { interface Services { tokenMeter?: TokenMeter } } }`.
     */
    interface Services {}
  }
}

/** Shared services: every context sees a provided service as a property (`ctx.tokenMeter`). */
export interface HarnessServices extends Harness.Services {}

/** What a plugin's `setup` receives. Runtime modules add `llm`, `tools`, … by declaration merging. */
export interface PluginContext extends HarnessServices {
  /** The plugin this context belongs to, and its generation (1 on load, +1 per reload). */
  readonly plugin: { readonly name: string; readonly generation: number };
  /** Aborted when this plugin generation is disposed. */
  readonly signal: AbortSignal;
  /** Listens on a hook. Staged during setup; undone on unload. Returns a disposer. */
  on<K extends HookName>(hook: K, listener: ListenerOf<K>, options?: ListenOptions): Disposer;
  /** Emits to observers of an `emit` hook. */
  emit<K extends EmitName>(hook: K, event: EventOf<K>): void;
  /** Dispatches a waterfall with `inner` at its centre. */
  waterfall<K extends WaterfallName>(hook: K, payload: PayloadOf<K>, inner: (payload: PayloadOf<K>) => ResultOf<K>): ResultOf<K>;
  /** Delivers to the sinks of a `sink` hook, in order; undefined when all completed synchronously. */
  deliver<K extends SinkName>(hook: K, event: EventOf<K>): void | Promise<void>;
  /** Declares a hook of this plugin's own (global, idempotent). */
  declareHook(name: string, mode: HookMode): void;
  /**
   * Publishes a shared service under `name` while this plugin is loaded.
   * @throws HarnessError `DUPLICATE_SERVICE` when another plugin provides it.
   */
  provide<K extends keyof HarnessServices & string>(name: K, value: NonNullable<HarnessServices[K]>): Disposer;
  /** Adds a disposer to this plugin's fiber (timers, processes, sockets…). */
  onDispose(fn: () => unknown): Disposer;
  /** Reports a contained problem on `kernel/diagnostic`. */
  report(diagnostic: Omit<Diagnostic, 'source'> & { source?: string }): void;
}

/** Builds one part of every context (e.g. the scoped `ctx.llm`); runtime modules register these. */
export type ContextExtension = (scope: Scope, owner: string) => Record<string, unknown>;

/**
 * What contexts share: the bus, the service table and the extensions. Contexts are created with the
 * service table as their prototype, so a service provided later is visible everywhere at once.
 */
export class Kernel {
  readonly bus = new HookBus();
  private readonly services: Record<string, unknown> = Object.create(null);
  private readonly serviceOwners = new Map<string, string>();
  private readonly extensions: ContextExtension[] = [];

  /** Adds a context extension; contexts created afterwards get its members. */
  extend(extension: ContextExtension): void {
    this.extensions.push(extension);
  }

  /** Provided services and the plugin providing each. */
  describeServices(): { name: string; owner: string }[] {
    return [...this.serviceOwners].map(([name, owner]) => ({ name, owner }));
  }

  service<T = unknown>(name: string): T | undefined {
    return this.services[name] as T | undefined;
  }

  /**
   * A context whose registrations go into `scope`. `plugin.order` (from `bus.reserveOrder()`) is the
   * plugin's place in registration order, kept by the host across reloads so that a reloaded
   * plugin's listeners keep their place among other plugins' listeners of the same stage.
   */
  createContext(scope: Scope, plugin: { name: string; generation: number; order?: number }): PluginContext {
    const kernel = this;
    const bus = this.bus;
    const owner = plugin.name;
    const order = plugin.order;
    const base: Partial<PluginContext> = {
      plugin: Object.freeze({ name: plugin.name, generation: plugin.generation }),
      signal: scope.fiber.signal,
      on(hook, listener, options) {
        bus.requireMode(hook);
        if (typeof listener !== 'function') {
          throw new HarnessError('INVALID_LISTENER', `Plugin "${owner}": the listener for "${hook}" must be a function.`);
        }
        return scope.register({ apply: () => bus.add(hook, listener as never, { ...options, owner, ...(order === undefined ? {} : { order }) }) });
      },
      emit: (hook, event) => bus.emit(hook, event),
      waterfall: (hook, payload, inner) => bus.waterfall(hook, payload, inner),
      deliver: (hook, event) => bus.deliver(hook, event),
      declareHook: (name, mode) => bus.declare(name, mode),
      provide(name, value) {
        const validate = (phase: 'register' | 'commit' = 'commit') => {
          const holder = kernel.serviceOwners.get(name);
          if (holder !== undefined && !(phase === 'register' && holder === owner)) {
            throw new HarnessError('DUPLICATE_SERVICE', `Service "${name}" is already provided by plugin "${holder}"; plugin "${owner}" cannot provide it too.`);
          }
        };
        return scope.register({
          validate,
          apply: () => {
            validate('commit');
            kernel.services[name] = value;
            kernel.serviceOwners.set(name, owner);
            return () => {
              if (kernel.services[name] === value) {
                delete kernel.services[name];
                kernel.serviceOwners.delete(name);
              }
            };
          },
        });
      },
      onDispose: (fn) => scope.fiber.add(fn),
      report: (diagnostic) => bus.report({ source: owner, ...diagnostic }),
    };
    const ctx = Object.create(this.services) as PluginContext;
    Object.assign(ctx, base);
    for (const extension of this.extensions) Object.assign(ctx, extension(scope, owner));
    return ctx;
  }
}
