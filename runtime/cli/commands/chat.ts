/**
 * `harness chat`: a multi-turn REPL on one session; `harness dev`: the same, plus a file watcher on
 * the plugin folders named in the config — a saved change hot-reloads that plugin in the live session
 * (`host.reload(name)`) and prints one line saying so, or why it failed (the old generation keeps
 * serving).
 *
 * Keys: Enter sends a prompt. Ctrl-C cancels the running turn (the REPL stays usable); a second
 * Ctrl-C — at the prompt, or before the next prompt is sent — quits, as does Ctrl-D or `/exit`.
 * Approval policies that ask (`read-only` for write tools, `always-ask`) prompt y/n in a terminal.
 * With piped input each line is a prompt, run in order; the end of input quits after the last turn.
 */
import { watch, type FSWatcher } from 'chokidar';
import { dirname, resolve, sep } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import type { AgentSession, ApprovalRequest, Harness, PluginReloadedEvent, PluginReloadFailedEvent } from '../../index.ts';
import type { Io } from '../env.ts';
import { formatMs, oneLine } from '../format.ts';
import { LiveRenderer, usageFooter } from '../render.ts';
import { approvalQuestion, isYes, makeApprover, openHarness, resolveCall, sessionHints, titleOf, type Ask, type GlobalOptions, type TurnOptions } from '../setup.ts';

const HELP = [
  'Type a prompt and press Enter.',
  '  /session   the session id and journal',
  '  /exit      quit (also Ctrl-D, or Ctrl-C twice)',
  'Ctrl-C cancels the running turn.',
].join('\n');

export async function chatCommand(options: TurnOptions, globals: GlobalOptions, io: Io, mode: { watch: boolean }): Promise<number> {
  const harness = await openHarness(globals, io);
  let watcher: FSWatcher | undefined;
  try {
    const cwd = options.cwd ? resolve(options.cwd) : undefined;
    let session: AgentSession;
    let fresh = false;
    if (options.resume) {
      session = (await harness.openSession(options.resume, cwd ? { cwd } : {})).session;
    } else {
      await resolveCall(harness, options); // fail fast, before a journal exists
      session = await harness.createSession(cwd ? { cwd } : {});
      fresh = true;
    }
    const call = await resolveCall(harness, options, session);
    const repl = new Repl(harness, session, { ...options, fresh, call }, globals, io);
    const exit = repl.run();
    if (mode.watch) watcher = await startWatcher(harness, (line) => repl.notify(line), io);
    return await exit;
  } finally {
    await watcher?.close();
    await harness.dispose();
  }
}

class Repl {
  private readonly rl: Interface;
  private readonly terminal: boolean;
  private running: { controller: AbortController; done: Promise<void>; renderer: LiveRenderer } | undefined;
  private readonly queue: string[] = [];
  /** A Ctrl-C was pressed and no prompt was sent since: the next one quits. */
  private armed = false;
  private eof = false;
  private closing = false;
  private fresh: boolean;
  private exit!: (code: number) => void;

  constructor(
    private readonly harness: Harness,
    private readonly session: AgentSession,
    private readonly options: TurnOptions & { fresh: boolean; call: { provider?: string; model?: string } },
    private readonly globals: GlobalOptions,
    private readonly io: Io,
  ) {
    this.fresh = options.fresh;
    this.terminal = process.stdin.isTTY === true && io.interactive;
    this.rl = createInterface({ input: process.stdin, output: io.out, terminal: this.terminal, prompt: io.c.cyan('› ') });
  }

  run(): Promise<number> {
    const { c } = this.io;
    const header = this.session.state.header?.config;
    const defaults = this.harness.config.defaults;
    const model = this.options.call.provider ? `${this.options.call.provider}/${this.options.call.model}` : header ? `${header.provider}/${header.model}` : `${defaults?.provider ?? 'scripted'}/${defaults?.model ?? 'scripted-default'}`;
    this.io.out.write(`${c.bold('harness chat')} ${c.dim(`· session ${this.session.id} · ${model} · approvals ${this.options.approve ?? 'read-only'}`)}\n${c.dim('Ctrl-C cancels a turn · Ctrl-C twice or Ctrl-D quits · /help')}\n`);
    return new Promise<number>((resolveExit) => {
      this.exit = resolveExit;
      this.rl.on('line', (line) => {
        if (this.running) this.queue.push(line);
        else void this.handle(line);
      });
      this.rl.on('SIGINT', () => this.interrupt());
      const onSignal = () => this.interrupt();
      process.on('SIGINT', onSignal);
      this.rl.on('close', () => {
        process.off('SIGINT', onSignal);
        this.eof = true;
        if (!this.running && this.queue.length === 0) void this.quit(0);
      });
      this.prompt();
    });
  }

  /** Prints a line without tearing the prompt or a streaming reply apart. */
  notify(line: string): void {
    if (this.running) {
      this.running.renderer.line(line);
      return;
    }
    if (this.terminal && !this.eof) {
      this.io.out.write(`\r\x1b[2K${line}\n`);
      this.rl.prompt(true);
    } else this.io.out.write(`${line}\n`);
  }

  private prompt(): void {
    if (!this.eof && !this.closing) this.rl.prompt();
  }

  private async handle(line: string): Promise<void> {
    const text = line.trim();
    this.armed = false;
    if (!this.terminal) this.io.out.write(`${line}\n`); // piped input: show what was sent after its prompt
    if (text === '') return this.prompt();
    if (text === '/exit' || text === '/quit') return this.quit(0);
    if (text === '/help') {
      this.io.out.write(`${HELP}\n`);
      return this.prompt();
    }
    if (text === '/session') {
      this.io.out.write(`${this.io.c.dim('session')} ${this.session.id}\n${sessionHints(this.session, this.globals, this.io)}\n`);
      return this.prompt();
    }
    await this.turn(text);
    if (this.closing) return;
    const next = this.queue.shift();
    if (next !== undefined) return this.handle(next);
    if (this.eof) return this.quit(0);
    this.prompt();
  }

  private async turn(prompt: string): Promise<void> {
    const { c } = this.io;
    const controller = new AbortController();
    const renderer = new LiveRenderer(this.io);
    const ask: Ask | undefined = this.terminal ? (request) => this.ask(request, renderer, controller.signal) : undefined;
    const approve = makeApprover(this.harness, this.options.approve ?? 'read-only', ask);
    const done = (async () => {
      try {
        if (this.fresh) {
          this.fresh = false;
          await this.session.session.append('session/title', { title: titleOf(prompt) });
        }
        for await (const event of this.session.run(prompt, {
          signal: controller.signal,
          approve,
          ...this.options.call,
          ...(this.options.reasoningEffort ? { reasoningEffort: this.options.reasoningEffort } : {}),
        })) {
          renderer.event(event);
        }
      } catch (error) {
        renderer.line(c.red(`error: ${error instanceof Error ? error.message : String(error)}`));
      }
      renderer.finish();
      const end = renderer.lastTurnEnd?.data;
      if (end?.reason === 'error') this.io.out.write(`${c.red(`error ${end.failure?.code ?? 'UNKNOWN'}:`)} ${end.failure?.message ?? 'the turn failed'}\n`);
      else if (end?.reason === 'aborted') this.io.out.write(c.yellow('cancelled — the turn was aborted; the session goes on\n'));
      else if (end?.reason === 'max-tokens') this.io.out.write(c.yellow('the reply hit the output limit (max-tokens)\n'));
      this.io.out.write(`${c.dim(usageFooter(this.harness, this.session.id, renderer.usage, this.io))}\n\n`);
    })();
    this.running = { controller, done, renderer };
    try {
      await done;
    } finally {
      this.running = undefined;
    }
  }

  private async ask(request: ApprovalRequest, renderer: LiveRenderer, signal: AbortSignal): Promise<boolean> {
    await renderer.whenShown(request.callId);
    renderer.pause();
    renderer.breakLine();
    return new Promise((done) => {
      if (signal.aborted) return done(false);
      const onAbort = () => {
        this.io.out.write('\n');
        done(false);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.rl.question(approvalQuestion(request, this.io), { signal }, (answer) => {
        signal.removeEventListener('abort', onAbort);
        done(isYes(answer));
      });
    });
  }

  private interrupt(): void {
    if (this.closing) return;
    if (this.armed) {
      void this.quit(0);
      return;
    }
    if (this.running) {
      this.armed = true;
      this.running.controller.abort();
      this.running.renderer.line(this.io.c.yellow('^C cancelling the turn (Ctrl-C again to quit)'));
      return;
    }
    if (this.terminal && this.rl.line.length > 0) {
      // Ctrl-C on a half-typed line clears it, like a shell.
      this.io.out.write('^C\n');
      (this.rl as unknown as { line: string; cursor: number }).line = '';
      (this.rl as unknown as { cursor: number }).cursor = 0;
      this.prompt();
      return;
    }
    this.armed = true;
    this.io.out.write(`${this.terminal ? '^C\n' : ''}${this.io.c.dim('(Ctrl-C again to quit, or type a prompt)')}\n`);
    this.prompt();
  }

  private async quit(code: number): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const running = this.running;
    if (running) {
      running.controller.abort();
      await running.done.catch(() => undefined);
    }
    this.rl.close();
    this.io.out.write(`\n${sessionHints(this.session, this.globals, this.io)}\n`);
    this.exit(code);
  }
}

/**
 * Watches the folder of every plugin the config names by module path; a change reloads the plugins
 * of that folder. One line per outcome, from `plugin/reloaded` / `plugin/reload-failed`.
 */
async function startWatcher(harness: Harness, notify: (line: string) => void, io: Io): Promise<FSWatcher> {
  const { c } = io;
  const folders = new Map<string, string[]>();
  for (const info of harness.host.list()) {
    if (info.module === undefined) continue;
    const folder = dirname(info.module);
    folders.set(folder, [...(folders.get(folder) ?? []), info.name]);
  }
  harness.kernel.bus.add('plugin/reloaded', (event: PluginReloadedEvent) => notify(c.green(`↻ reloaded ${event.name} (generation ${event.generation}, ${formatMs(event.reloadMs)}) — the session goes on with the new code`)), { owner: 'cli' });
  harness.kernel.bus.add(
    'plugin/reload-failed',
    (event: PluginReloadFailedEvent) => notify(c.red(`✗ reload of ${event.name} failed — ${event.failure.code}: ${oneLine(describeFailure(event), 240)} (generation ${event.generation} still serving)`)),
    { owner: 'cli' },
  );
  const timers = new Map<string, NodeJS.Timeout>();
  const watcher = watch([...folders.keys()], { ignoreInitial: true, ignored: (path: string) => path.includes(`${sep}node_modules${sep}`) || /(^|[/\\])\.[^/\\]/.test(path) });
  watcher.on('all', (_event, path) => {
    if (!/\.(m?[jt]s|json)$/.test(path)) return;
    const folder = [...folders.keys()].filter((f) => path === f || path.startsWith(f + sep)).sort((a, b) => b.length - a.length)[0];
    if (folder === undefined) return;
    for (const name of folders.get(folder)!) {
      clearTimeout(timers.get(name));
      timers.set(
        name,
        setTimeout(() => {
          timers.delete(name);
          harness.host.reload(name).catch(() => undefined); // the outcome is printed from the plugin/* events
        }, 120),
      );
    }
  });
  await new Promise<void>((ready) => watcher.once('ready', () => ready()));
  const names = [...folders.values()].flat();
  notify(c.dim(`watching ${folders.size} plugin folder${folders.size === 1 ? '' : 's'} (${names.join(', ')}); a saved change reloads that plugin`));
  const close = watcher.close.bind(watcher);
  watcher.close = async () => {
    for (const timer of timers.values()) clearTimeout(timer);
    await close();
  };
  return watcher;
}

/** The failure of a reload, with its cause's first words when the message is only a preamble. */
function describeFailure(event: PluginReloadFailedEvent): string {
  const cause = (event.error as { cause?: unknown } | undefined)?.cause;
  const causeText = cause instanceof Error ? cause.message : '';
  const message = event.failure.message;
  return causeText && !message.includes(causeText.split('\n')[0]!) ? `${message} ${causeText}` : message;
}
