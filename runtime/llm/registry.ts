/**
 * Adapter routes (seed 002 14.3 "注册协议"): a provider id routes to one adapter registration.
 *
 * `register` validates the whole route set before anything changes (empty names → `INVALID_ROUTE`;
 * a duplicate within the set or a route owned elsewhere → `DUPLICATE_ADAPTER`) and commits it in one
 * synchronous section, so a lookup never sees half a route set. `llm/adapters-updated` is emitted
 * once after each synchronous section of changes (on a microtask), with the route table as it then
 * is — so no observer ever sees the inside of a reload's swap. A registration counts its in-flight
 * streams so that a swapped-out generation can drain before its plugin's other disposers run; once
 * its fiber disposes (unload, reload, or the handle), the handle is dead (`REGISTRATION_DISPOSED`).
 */
import type { HookBus } from '../kernel/bus.ts';
import type { Disposer } from '../kernel/bus.ts';
import type { Registration } from '../kernel/fiber.ts';
import type { LlmAdapter } from './adapter.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import { LlmError } from './errors.ts';

/** One provider route as `llm/adapters-updated` reports it. */
export interface RouteInfo {
  readonly provider: string;
  /** The adapter kind (its replay format kind, or its class name). */
  readonly kind: string;
  /** The plugin that registered the route. */
  readonly owner: string;
  /** Registration id: changes when a reload re-registers the route. */
  readonly registrationId: number;
}

/** `llm/adapters-updated` payload: the whole route table after a change. */
export interface AdaptersUpdatedEvent {
  readonly routes: readonly RouteInfo[];
}

/** A registration handle: call it to dispose; `replace(providers)` changes its route set atomically. */
export interface AdapterRegistrationHandle extends Disposer {
  /**
   * Swaps this registration's routes for `providers` in one synchronous step (`[]` is legal).
   * @throws LlmError `INVALID_ROUTE`, `DUPLICATE_ADAPTER` (routes unchanged), `REGISTRATION_DISPOSED`.
   */
  replace(providers: readonly string[]): void;
  readonly providers: readonly string[];
  readonly disposed: boolean;
}

/** One registration of one adapter, live or staged. */
export class AdapterRegistration {
  private static nextId = 1;
  readonly id = AdapterRegistration.nextId++;
  providers: readonly string[];
  applied = false;
  disposed = false;
  private inflight = 0;
  private drained: (() => void)[] = [];

  constructor(
    readonly adapter: LlmAdapter,
    readonly owner: string,
    providers: readonly string[],
  ) {
    this.providers = providers;
  }

  get kind(): string {
    return this.adapter.replayFormat?.kind ?? this.adapter.constructor.name;
  }

  /** Marks one stream as running on this registration; the returned function ends it (once). */
  enter(): () => void {
    this.inflight++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--this.inflight === 0) for (const resolve of this.drained.splice(0)) resolve();
    };
  }

  /** Resolves when no stream runs on this registration, or after `timeoutMs`. */
  drain(timeoutMs: number): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      timer.unref?.();
      this.drained.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

export class AdapterRegistry {
  private readonly routes = new Map<string, AdapterRegistration>();
  private updateScheduled = false;
  private lastUpdate = '[]';

  constructor(
    private readonly bus: HookBus,
    private readonly drainTimeoutMs = 30_000,
  ) {}

  lookup(provider: string): AdapterRegistration | undefined {
    return this.routes.get(provider);
  }

  providers(): string[] {
    return [...this.routes.keys()];
  }

  list(): RouteInfo[] {
    return [...this.routes].map(([provider, registration]) => ({ provider, kind: registration.kind, owner: registration.owner, registrationId: registration.id }));
  }

  /**
   * Creates a registration and its handle. `register` is the scope's staging function: it runs
   * `validate` now and `apply` now or at the plugin's commit.
   */
  create(providers: readonly string[], adapter: LlmAdapter, owner: string, register: (registration: Registration) => Disposer): AdapterRegistrationHandle {
    if (adapter === null || typeof adapter !== 'object' || typeof adapter.stream !== 'function') {
      throw new LlmError('INVALID_REQUEST', `registerAdapter needs an adapter object with a stream(options) method (plugin "${owner}").`);
    }
    const registration = new AdapterRegistration(adapter, owner, normalizeProviders(providers, owner));
    const dispose = register({
      validate: (phase) => this.validate(registration.providers, registration, phase),
      apply: () => {
        this.validate(registration.providers, registration, 'commit');
        this.commit(registration, [], registration.providers);
        registration.applied = true;
        return () => {
          this.commit(registration, registration.providers, []);
          registration.applied = false;
        };
      },
      // Runs only when the registration's fiber disposes (plugin unload, a reload retiring the old
      // generation, or the handle): from then on the handle is dead.
      drain: () => {
        registration.disposed = true;
        return registration.drain(this.drainTimeoutMs);
      },
    });
    const handle = (() => {
      if (registration.disposed) return;
      registration.disposed = true;
      dispose();
    }) as AdapterRegistrationHandle;
    Object.defineProperties(handle, {
      providers: { get: () => registration.providers },
      disposed: { get: () => registration.disposed },
      replace: {
        value: (next: readonly string[]) => {
          if (registration.disposed) {
            throw new LlmError('REGISTRATION_DISPOSED', `This adapter registration (plugin "${owner}") was disposed; register the adapter again instead of replacing its routes.`);
          }
          const providersNext = normalizeProviders(next, owner);
          this.validate(providersNext, registration, registration.applied ? 'commit' : 'register');
          if (registration.applied) this.commit(registration, registration.providers, providersNext);
          registration.providers = providersNext;
        },
      },
    });
    return handle;
  }

  private validate(providers: readonly string[], registration: AdapterRegistration, phase: 'register' | 'commit'): void {
    for (const provider of providers) {
      const holder = this.routes.get(provider);
      if (holder === undefined || holder === registration) continue;
      if (phase === 'register' && holder.owner === registration.owner) continue; // a reload's old generation
      throw new LlmError(
        'DUPLICATE_ADAPTER',
        `Provider "${provider}" is already routed to an adapter of plugin "${holder.owner}"; plugin "${registration.owner}" cannot take it. Unload that plugin or pick another provider id.`,
        { details: { provider, owner: holder.owner } },
      );
    }
  }

  /** The one synchronous section in which routes change. */
  private commit(registration: AdapterRegistration, remove: readonly string[], add: readonly string[]): void {
    for (const provider of remove) if (this.routes.get(provider) === registration) this.routes.delete(provider);
    for (const provider of add) this.routes.set(provider, registration);
    this.scheduleUpdate();
  }

  /**
   * `llm/adapters-updated` goes out once per synchronous section, after it, with the table as it then
   * is: a reload's swap (detach the old generation, commit the new) is two commits, and an observer
   * called in between would see a table without the plugin's routes — a window with no adapter.
   */
  private scheduleUpdate(): void {
    if (this.updateScheduled) return;
    this.updateScheduled = true;
    queueMicrotask(() => {
      this.updateScheduled = false;
      const routes = this.list();
      const key = JSON.stringify(routes);
      if (key === this.lastUpdate) return;
      this.lastUpdate = key;
      this.bus.emit('llm/adapters-updated', deepFreeze({ routes }));
    });
  }
}

function normalizeProviders(providers: readonly string[], owner: string): readonly string[] {
  if (!Array.isArray(providers)) {
    throw new LlmError('INVALID_ROUTE', `registerAdapter(providers, adapter) needs an array of provider ids (plugin "${owner}").`);
  }
  const seen = new Set<string>();
  for (const provider of providers) {
    if (typeof provider !== 'string' || provider.trim() === '') {
      throw new LlmError('INVALID_ROUTE', `Provider ids must be non-empty strings; plugin "${owner}" gave ${JSON.stringify(provider)}.`);
    }
    if (seen.has(provider)) {
      throw new LlmError('DUPLICATE_ADAPTER', `Provider "${provider}" appears twice in one route set (plugin "${owner}").`, { details: { provider } });
    }
    seen.add(provider);
  }
  return Object.freeze([...providers]);
}
