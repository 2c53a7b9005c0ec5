/**
 * `harness dev`'s watcher: the folder of every plugin the config names by a module path (the
 * running ones, and those that failed to load), and the config file itself.
 *
 * - A saved file in a running plugin's folder reloads that plugin (`host.reload`): one line says
 *   `↻ reloaded …`, or why it failed with the old generation still serving.
 * - A saved config is read again and applied (`reloadConfig`): added plugins load, removed ones
 *   unload, a plugin whose config entry changed reloads with it; a config that does not load
 *   changes nothing and its coded error is printed with its `file:line:col`.
 * - A saved file in the folder of a plugin that failed to load (at start, or when the config added
 *   it) tries to load it again. While any plugin of the config is not running, prompts are refused
 *   ({@link DevWatcher.blocked}): the session would otherwise run on a stack the config does not
 *   describe.
 *
 * Every one of these changes is journaled in the open session by the runtime (`plugin/reload`).
 * Lines are printed through `notify`, which never splits a streamed line (see `LiveRenderer.notice`).
 */
import { watch, type FSWatcher } from 'chokidar';
import { basename, dirname, resolve, sep } from 'node:path';
import {
  appliedConfig,
  applyConfig,
  HarnessError,
  pluginsNotRunning,
  reloadConfig,
  type ConfigReloadFailedEvent,
  type Harness,
  type PluginInfo,
  type PluginReloadedEvent,
  type PluginReloadFailedEvent,
} from '../runtime/index.ts';
import type { Io } from './env.ts';
import { formatMs, oneLine, printable } from './format.ts';
import { errorLocation } from './setup.ts';

/** Saves within this many ms are one change (editors write a file in several steps). */
const DEBOUNCE_MS = 120;

/** The coded error of a plugin or config that did not load, with where it went wrong: `CODE: message (at file:line:col)`. */
export async function describeLoadError(error: unknown, configPath: string | undefined): Promise<string> {
  const code = HarnessError.is(error) ? error.code : 'UNKNOWN';
  const where = HarnessError.is(error) ? await errorLocation(error, configPath).catch(() => undefined) : undefined;
  const message = oneLine(messageWithCause(error), 300);
  // A located schema issue's message already ends with its file:line:col.
  return `${code}: ${message}${where && !message.includes(where.at) ? ` (at ${where.at})` : ''}`;
}

/** An error's message, with its cause's first line when the message is only a preamble. */
function messageWithCause(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  const causeText = cause instanceof Error ? cause.message.split('\n')[0]! : '';
  return causeText && !message.includes(causeText) ? `${message} ${causeText}` : message;
}

export class DevWatcher {
  private watcher: FSWatcher | undefined;
  /** Watched plugin folders, each with the running plugins whose module is in it. */
  private folders = new Map<string, string[]>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Reloads of the stack run one after another, so their lines come in order. */
  private queue: Promise<unknown> = Promise.resolve();
  /** The last load error of each entry that is not running, by its label. */
  private readonly loadErrors = new Map<string, string>();
  private readonly disposers: (() => void)[] = [];
  private closed = false;
  /** Some plugin of the config was not running at the last look (to say when all are). */
  private hadMissing = false;

  constructor(
    private readonly harness: Harness,
    private readonly notify: (line: string) => void,
    private readonly io: Io,
  ) {}

  /** Records why a plugin did not load at start (its label: module path or name), for {@link blocked}. */
  startupFailure(label: string, described: string): void {
    this.loadErrors.set(label, described);
  }

  /** Starts watching; resolves once the watcher is ready (and has said what it watches). */
  async start(): Promise<void> {
    const { c } = this.io;
    const bus = this.harness.kernel.bus;
    const configPath = this.harness.configPath;
    const on = <E>(hook: string, listener: (event: E) => void) => this.disposers.push(bus.add(hook, listener, { owner: 'cli' }));
    on('plugin/reloaded', (event: PluginReloadedEvent) =>
      this.notify(
        c.green(
          `↻ reloaded ${event.name} (generation ${event.generation}, ${formatMs(event.reloadMs)})${event.configKeys ? ` with its new config (${event.configKeys.join(', ')})` : ''} — the session goes on with the new code`,
        ),
      ),
    );
    on('plugin/reload-failed', (event: PluginReloadFailedEvent) => {
      void describeLoadError(event.error, configPath).then((described) =>
        this.notify(c.red(`✗ reload of ${event.name} failed — ${printable(described)} (generation ${event.generation} still serving)`)),
      );
    });
    on('plugin/loaded', (event: PluginInfo) => this.notify(c.green(`↻ loaded ${event.name} (generation ${event.generation})`)));
    on('plugin/unloaded', (event: PluginInfo) => this.notify(c.yellow(`↻ unloaded ${event.name} — it is no longer in the config`)));
    on('config/reload-failed', (event: ConfigReloadFailedEvent) => {
      void describeLoadError(event.error, configPath).then((described) => {
        if (event.plugin !== undefined) this.loadErrors.set(event.plugin, described);
        this.notify(
          c.red(
            event.plugin === undefined
              ? `✗ the config ${event.configPath} did not load — ${printable(described)} (nothing changed: the running plugins keep serving)`
              : `✗ ${event.plugin} did not load — ${printable(described)}`,
          ),
        );
      });
    });

    this.folders = this.pluginFolders();
    const paths = [...this.folders.keys(), ...(configPath !== undefined ? [configPath] : [])];
    const watcher = watch(paths, {
      ignoreInitial: true,
      ignored: (path: string) => path.includes(`${sep}node_modules${sep}`) || /(^|[/\\])\.[^/\\]/.test(path),
    });
    this.watcher = watcher;
    watcher.on('all', (_event, path) => this.changed(resolve(path)));
    await new Promise<void>((ready) => watcher.once('ready', () => ready()));
    // The running plugins by name; one that did not load has no name yet: its module's file.
    const notRunning = pluginsNotRunning(this.harness);
    const names = [
      ...[...this.folders.values()].flat(),
      ...notRunning.flatMap((entry) =>
        entry.module === undefined || entry.module.includes(`${sep}node_modules${sep}`) ? [] : [`${basename(dirname(entry.module))}/${basename(entry.module)} not loaded yet`],
      ),
    ];
    const pending = notRunning.length;
    this.hadMissing = pending > 0;
    this.notify(
      c.dim(
        `watching ${this.folders.size} plugin folder${this.folders.size === 1 ? '' : 's'} (${names.join(', ')})${configPath ? ` and the config ${configPath}` : ''}; a saved change reloads what changed${pending ? ` — waiting for ${pending} plugin${pending === 1 ? '' : 's'} to load` : ''}`,
      ),
    );
  }

  /**
   * Why a prompt cannot be sent now: the plugins of the config that are not running, with their
   * last error; undefined when every one runs.
   */
  blocked(): string | undefined {
    const missing = pluginsNotRunning(this.harness);
    if (missing.length === 0) return undefined;
    const which = missing.map((entry) => `${printable(entry.label)}${this.loadErrors.has(entry.label) ? ` (${this.loadErrors.get(entry.label)})` : ''}`);
    return `The prompt was not sent: ${missing.length === 1 ? 'a plugin of the config is' : `${missing.length} plugins of the config are`} not loaded — ${which.join('; ')}. Save a fix and dev loads it (or remove it from the config); /exit quits.`;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    for (const dispose of this.disposers.splice(0)) dispose();
    await this.watcher?.close();
    await this.queue.catch(() => undefined);
  }

  /** Folders of the config's plugins named by module path (running or not), outside node_modules. */
  private pluginFolders(): Map<string, string[]> {
    const folders = new Map<string, string[]>();
    const add = (module: string, name: string | undefined) => {
      // Packages (the shipped plugins of an installed harness-runtime, other npm plugins) are not edited in place.
      if (module.includes(`${sep}node_modules${sep}`)) return;
      const folder = dirname(module);
      const names = folders.get(folder) ?? [];
      if (name !== undefined) names.push(name);
      folders.set(folder, names);
    };
    for (const info of this.harness.host.list()) if (info.module !== undefined) add(info.module, info.name);
    for (const entry of pluginsNotRunning(this.harness)) if (entry.module !== undefined) add(entry.module, undefined);
    return folders;
  }

  private changed(path: string): void {
    if (this.closed) return;
    if (path === this.harness.configPath) return this.debounce('config', () => this.reloadTheConfig());
    if (!/\.(m?[jt]s|json)$/.test(path)) return;
    const folder = [...this.folders.keys()].filter((f) => path === f || path.startsWith(f + sep)).sort((a, b) => b.length - a.length)[0];
    if (folder === undefined) return;
    for (const name of this.folders.get(folder)!) {
      // The outcome is printed from the plugin/* hooks.
      this.debounce(`plugin:${name}`, () => this.harness.host.reload(name).catch(() => undefined));
    }
    if (pluginsNotRunning(this.harness).some((entry) => entry.module !== undefined && dirname(entry.module) === folder)) {
      this.debounce('missing', () => this.loadMissing());
    }
  }

  private debounce(key: string, run: () => Promise<unknown>): void {
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        this.queue = this.queue.then(run).catch(() => undefined);
      }, DEBOUNCE_MS),
    );
  }

  private async reloadTheConfig(): Promise<void> {
    const result = await reloadConfig(this.harness);
    if (result.outcome === 'failed') return; // printed from config/reload-failed
    const { c } = this.io;
    if (result.outcome === 'unchanged') this.notify(c.dim('↻ config saved: no plugin changed'));
    if (result.restartKeys.length > 0) this.notify(c.yellow(`the config's ${result.restartKeys.join(', ')} changed: restart dev to use ${result.restartKeys.length === 1 ? 'it' : 'them'}`));
    this.afterChange();
  }

  private async loadMissing(): Promise<void> {
    await applyConfig(this.harness, appliedConfig(this.harness));
    this.afterChange();
  }

  /** After plugins came or went: watch their folders, forget what loaded, say when prompts are accepted again. */
  private afterChange(): void {
    const running = new Set(this.harness.host.list().map((info) => info.name));
    const missing = new Set(pluginsNotRunning(this.harness).map((entry) => entry.label));
    for (const label of [...this.loadErrors.keys()]) if (!missing.has(label) || running.has(label)) this.loadErrors.delete(label);
    const before = new Set(this.folders.keys());
    this.folders = this.pluginFolders();
    const added = [...this.folders.keys()].filter((folder) => !before.has(folder));
    // A folder no plugin is in any more stays watched: its changes find no plugin (unwatching it could drop the config file beside it).
    if (added.length > 0) this.watcher?.add(added);
    if (this.hadMissing && missing.size === 0) this.notify(this.io.c.green('every plugin of the config is loaded: prompts are sent again'));
    this.hadMissing = missing.size > 0;
  }
}
