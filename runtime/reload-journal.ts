/**
 * Plugin reloads in the journal (DESIGN "Hot reload"; issue 17 "dev", issue 19 "plugin reloads as
 * marked events"): every change of the running plugin stack — a reload (ok or failed), a plugin
 * loaded or unloaded while sessions are open, a config that did not load — is appended as one
 * ignorable `plugin/reload` record to every open top-level session (a child session's parent holds
 * it). The record is appended synchronously from the kernel's emit hooks, so its seq sits exactly
 * where the swap happened: between turns, or inside one (with `turn` and `step`), where the call
 * already running keeps the generation it was prepared with.
 *
 * It never changes the fold's state, so turn pairing, crash repair, fork, cassette and verify see
 * the same session as without it, and a reader that does not know the type skips it.
 */
import type { EmitHook, HookBus } from './kernel/bus.ts';
import { toFailure, type Failure } from './kernel/errors.ts';
import type { PluginInfo, PluginReloadedEvent, PluginReloadFailedEvent } from './kernel/plugin.ts';
import type { AgentSession } from './agent/session.ts';
import type { PluginReloadRecord } from './session/events.ts';

/**
 * `config/reload-failed` payload: a re-read config changed nothing because it did not load
 * (`plugin` absent: its syntax, its shape), or a plugin it adds did not load (`plugin`: the entry's
 * module or name).
 */
export interface ConfigReloadFailedEvent {
  /** The config file. */
  readonly configPath: string;
  /** The plugin the config adds that failed to load (its name when known, else its module path). */
  readonly plugin?: string;
  /** That plugin's module file, when it is named by module. */
  readonly module?: string;
  readonly failure: Failure;
  readonly error: unknown;
}

declare module './kernel/bus.ts' {
  interface HookMap {
    'config/reload-failed': EmitHook<ConfigReloadFailedEvent>;
  }
}

/**
 * Journals the stack's changes into the sessions `sessions()` lists (see the module comment).
 * Returns the disposer of its listeners.
 */
export function journalReloads(bus: HookBus, sessions: () => Iterable<AgentSession>): () => void {
  bus.declare('config/reload-failed', 'emit');
  const record = (data: PluginReloadRecord): void => {
    for (const session of sessions()) {
      if (session.session.header.parentSession !== undefined) continue;
      const open = session.state.openTurn;
      const where = open === undefined ? {} : { turn: open.turn, ...(open.step !== undefined ? { step: open.step } : {}) };
      let appended: unknown;
      try {
        appended = session.session.append('plugin/reload', { ...data, ...where });
      } catch {
        continue; // a session closing meanwhile: nothing to record it in
      }
      void Promise.resolve(appended).catch((error: unknown) =>
        bus.report({
          level: 'warning',
          code: 'RELOAD_NOT_JOURNALED',
          source: 'harness',
          message: `A plugin reload could not be journaled in session ${session.id}: ${toFailure(error).message}`,
          error,
        }),
      );
    }
  };
  const on = <E>(hook: string, listener: (event: E) => void) => bus.add(hook, listener, { owner: 'harness' });
  const disposers = [
    on('plugin/reloaded', (event: PluginReloadedEvent) =>
      record({
        action: 'reload',
        outcome: 'ok',
        ...pluginOf(event),
        ...(event.configKeys ? { configKeys: event.configKeys } : {}),
        swapMs: round(event.swapMs),
        reloadMs: round(event.reloadMs),
      }),
    ),
    on('plugin/reload-failed', (event: PluginReloadFailedEvent) =>
      record({ action: 'reload', outcome: 'failed', ...pluginOf(event), ...(event.configKeys ? { configKeys: event.configKeys } : {}), failure: event.failure }),
    ),
    on('plugin/loaded', (event: PluginInfo) => record({ action: 'load', outcome: 'ok', ...pluginOf(event) })),
    on('plugin/unloaded', (event: PluginInfo) => record({ action: 'unload', outcome: 'ok', ...pluginOf(event) })),
    on('config/reload-failed', (event: ConfigReloadFailedEvent) =>
      record({
        action: event.plugin === undefined ? 'config' : 'load',
        outcome: 'failed',
        ...(event.plugin !== undefined ? { name: event.plugin } : {}),
        ...(event.module !== undefined ? { module: event.module } : {}),
        configPath: event.configPath,
        failure: event.failure,
      }),
    ),
  ];
  return () => {
    for (const dispose of disposers) dispose();
  };
}

function pluginOf(event: { name: string; generation: number; module?: string }): Pick<PluginReloadRecord, 'name' | 'generation' | 'module'> {
  return { name: event.name, generation: event.generation, ...(event.module !== undefined ? { module: event.module } : {}) };
}

/** Durations to 0.01 ms: a journal needs no nanoseconds. */
function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
