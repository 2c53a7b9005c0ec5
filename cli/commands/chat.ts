/**
 * `harness chat`: a multi-turn REPL on one session; `harness dev`: the same, plus a watcher on the
 * config and the plugin folders it names (see dev.ts) — a saved change hot-reloads what changed in
 * the live session and prints one line saying so (at the next line boundary of a streaming reply),
 * or why it failed (the old generation keeps serving). A plugin that does not load at start leaves
 * dev running: its coded error is printed and prompts are refused until a saved fix loads it
 * (`chat` and `run` fail at once instead).
 *
 * Keys: Enter sends a prompt; Alt-Enter or Ctrl-J enters a newline instead, and a pasted block
 * (bracketed paste) is one prompt however many lines it has (see line-input.ts). Ctrl-C cancels the
 * running turn (the REPL stays usable); a second Ctrl-C — at the prompt, or before the next prompt
 * is sent — quits, as does Ctrl-D or `/exit`. SIGTERM and SIGHUP cancel the running turn the same
 * way, then quit (exit 128 + the signal). Approval policies that ask (`read-only` for write tools,
 * `always-ask`) prompt in a terminal: y, n, a (always for that tool in this session), v (view all).
 * With piped input each line is a prompt or a command, run in order; the end of input quits after
 * the last one.
 *
 * A new session is created with the first prompt: quitting before one leaves no journal.
 */
import { resolve } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { forkSession, HarnessError, readJournal, type AgentSession, type AnySessionEvent, type ApprovalRequest, pluginsNotRunning, type Harness, type PluginSpec } from '../../runtime/index.ts';
import { askInTerminal, SessionAllowances, type Ask, type AskAnswer } from '../approval.ts';
import { describeLoadError, DevWatcher } from '../dev.ts';
import { shellQuote, type Io } from '../env.ts';
import { sessionsOfWorkspace } from '../find-session.ts';
import { forkInsideTurnMessage } from '../fork-seqs.ts';
import { formatAgo, oneLine, printable } from '../format.ts';
import { holdExitUntil, onStop, type StopRequest } from '../lifecycle.ts';
import { BRACKETED_PASTE_OFF, BRACKETED_PASTE_ON, filteredTerminalInput, fromEditedLine } from '../line-input.ts';
import { markdownFor, type RenderMarkdown } from '../markdown.ts';
import { promptTooLarge } from '../prompt.ts';
import { LiveRenderer, TranscriptPrinter } from '../render.ts';
import {
  checkWorkspace,
  makeApprover,
  openHarness,
  POLICIES,
  resolveCall,
  selfWithGlobals,
  sessionArgument,
  sessionHints,
  refOfSession,
  sessionRef,
  sourceOfSession,
  titleOf,
  type GlobalOptions,
  type TurnOptions,
} from '../setup.ts';
import { UsageTally } from '../usage.ts';
import { failureHint, journalToResume, resumeSession } from './run.ts';

/** The chat's slash commands, with what each does (`/help` prints them; Tab completes them). */
const COMMANDS: readonly (readonly [name: string, args: string, what: string])[] = [
  ['/help', '', 'these commands'],
  ['/model', '[provider/]model', 'switch the model; the next request uses it (journaled as a change of the call)'],
  ['/approve', '<policy>', `the approval policy from now on (${POLICIES.join(', ')})`],
  ['/cost', '', 'tokens and cost: the last turn and the whole session'],
  ['/tools', '', 'the tools the model can call'],
  ['/sessions', '', 'the latest sessions of this workspace'],
  ['/resume', '<session>', 'go on in another session (an id, a unique start of one, or a journal path); its last turns are shown'],
  ['/fork', '[seq]', 'a new session from this one up to seq (default: all of it); the chat goes on in the fork'],
  ['/compact', '', 'summarise the older turns now (the compaction plugin), keeping the last ones verbatim'],
  ['/session', '', 'the session id and journal'],
  ['/exit', '', 'quit (also /quit, Ctrl-D, or Ctrl-C twice)'],
];

const HELP = [
  'Type a prompt and press Enter. Commands:',
  ...COMMANDS.map(([name, args, what]) => `  ${`${name} ${args}`.padEnd(26)} ${what}`),
  'Keys: Enter sends · Alt-Enter or Ctrl-J: a newline (shown as ␤) · a pasted block is one prompt ·',
  '  Tab completes a command · Ctrl-C cancels the running turn (twice: quits) · Ctrl-D quits.',
  'Approval questions: y = yes, n = no (the default), a = always for that tool in this session, v = view all.',
].join('\n');

/** A line that is a command: `/word`, alone or followed by arguments (a path like `/etc/hosts …` is a prompt). */
const COMMAND_LINE = /^\/([A-Za-z][\w-]*)(?:\s+(.*))?$/s;

export async function chatCommand(options: TurnOptions, globals: GlobalOptions, io: Io, mode: { watch: boolean }): Promise<number> {
  const cwd = options.cwd ? checkWorkspace(resolve(options.cwd), '--cwd') : undefined;
  // dev: a plugin that does not load leaves the others running (its error is printed below).
  const broken: { spec: PluginSpec; error: unknown }[] = [];
  const harness = await openHarness(globals, io, mode.watch ? { onPluginError: (error, spec) => void broken.push({ spec, error }) } : {});
  let watcher: DevWatcher | undefined;
  let repl: Repl | undefined;
  // A stop before the REPL runs ends the command before anything is opened; while it runs, it quits it.
  let stopped: StopRequest | undefined;
  // Settles once the session's journal is closed (below): a second SIGTERM/SIGHUP (a closed
  // terminal sends two) waits for it, so a running turn's abort is journaled before the exit.
  let journalClosed!: () => void;
  const closing = new Promise<void>((done) => (journalClosed = done));
  const disposeStop = onStop((request) => {
    holdExitUntil(closing);
    stopped = request;
    void repl?.stop(request);
  });
  try {
    if (mode.watch) watcher = new DevWatcher(harness, (line) => (repl ? repl.notify(line) : io.out.write(`${line}\n`)), io);
    for (const { spec, error } of broken) {
      const label = pluginsNotRunning(harness).find((entry) => entry.spec === spec)?.label ?? spec.plugin?.name ?? spec.module ?? '(plugin)';
      const described = await describeLoadError(error, harness.configPath);
      watcher!.startupFailure(label, described);
      io.err.write(
        `${io.c.red(`error ${printable(described)}`)}\n${io.c.dim(`hint: dev goes on without ${printable(label)} and sends no prompt until it loads: save a fix (its folder is watched), or remove it from the config.`)}\n`,
      );
    }
    let session: AgentSession | undefined;
    const resume = await journalToResume(harness, { ...options, ...(cwd ? { cwd } : {}) }, io);
    if (resume !== undefined) session = await resumeSession(harness, resume, cwd, io);
    // Fails fast (unknown model, missing key): a new session is only created with the first prompt.
    // With a plugin missing (dev), the model is checked at the first prompt sent once it loaded.
    const call = broken.length === 0 ? await resolveCall(harness, options, session) : undefined;
    if (stopped) {
      await session?.close();
      return stopped.exitCode;
    }
    const recap = session ? await recapOf(session, harness, globals, io) : '';
    repl = new Repl(
      harness,
      session,
      {
        ...options,
        ...(cwd ? { cwd } : {}),
        call: call ?? {},
        callChecked: call !== undefined,
        recap,
        markdown: await markdownFor(io),
        ...(watcher ? { blocked: () => watcher!.blocked() } : {}),
      },
      globals,
      io,
    );
    const exit = repl.run();
    await watcher?.start();
    return await exit;
  } finally {
    await watcher?.close();
    await repl?.close();
    journalClosed();
    disposeStop();
    await harness.dispose();
  }
}

/** How many of a resumed session's turns a chat prints before its prompt. */
const RECAP_TURNS = 2;

/** What a resumed chat shows first: the session's last turns, as the transcript shows them. */
async function recapOf(session: AgentSession, harness: Harness, globals: GlobalOptions, io: Io): Promise<string> {
  const dataDir = harness.dataDir;
  const events: AnySessionEvent[] = [];
  for await (const event of readJournal(sourceOfSession(harness, session))) events.push(event);
  const starts = events.flatMap((event, index) => (event.type === 'turn/start' ? [index] : []));
  if (starts.length === 0) return '';
  const from = starts[Math.max(0, starts.length - RECAP_TURNS)]!;
  const shown = starts.length - starts.indexOf(from);
  const { c } = io;
  const which =
    shown === starts.length
      ? `the session so far (${starts.length} turn${starts.length === 1 ? '' : 's'})`
      : `the last ${shown} of ${starts.length} turns — ${selfWithGlobals(globals)} replay ${shellQuote(sessionArgument(session.path, dataDir))} shows them all`;
  const lines: string[] = [];
  const printer = new TranscriptPrinter({ ...io, out: { write: (text: string) => lines.push(text) } as unknown as NodeJS.WriteStream });
  for (const event of events.slice(from)) printer.event(event);
  return `${c.dim(`── ${which} ──`)}\n${lines.join('')}${c.dim('── resumed: the session goes on ──')}\n`;
}

class Repl {
  private readonly rl: Interface;
  private readonly terminal: boolean;
  private running: { controller: AbortController; done: Promise<void>; renderer: LiveRenderer } | undefined;
  /** A line (prompt or command) is being handled: the next ones wait in {@link queue}. */
  private handling = false;
  /** Cancels a slash command that waits on a model (`/compact`): Ctrl-C. */
  private commandController: AbortController | undefined;
  private readonly queue: string[] = [];
  /** Tools answered "always" at an approval question, for this session. */
  private readonly allowances = new SessionAllowances();
  /** The terminal input readline reads (bracketed paste, newline key), when in a terminal. */
  private readonly input: ReturnType<typeof filteredTerminalInput> | undefined;
  /** A Ctrl-C was pressed and no prompt was sent since: the next one quits. */
  private armed = false;
  private eof = false;
  private closing = false;
  /** How the running turn was cancelled (for the approval question's "no answer (…)"). */
  private cancelledBy: string | undefined;
  /** The stop that ends the REPL, if one came (its exit code wins). */
  private stopRequest: StopRequest | undefined;
  private tally: UsageTally | undefined;
  private exit!: (code: number) => void;

  constructor(
    private readonly harness: Harness,
    /** The session, once there is one: a new one is created with the first prompt. */
    private session: AgentSession | undefined,
    private readonly options: { -readonly [K in keyof TurnOptions]: TurnOptions[K] } & {
      call: { provider?: string; model?: string };
      /** `call` was checked with {@link resolveCall} (dev with a plugin missing checks it at the first prompt). */
      callChecked: boolean;
      recap?: string;
      markdown?: RenderMarkdown | undefined;
      /** dev: why no prompt can be sent now (a plugin of the config is not loaded), else undefined. */
      blocked?: () => string | undefined;
    },
    private readonly globals: GlobalOptions,
    private readonly io: Io,
  ) {
    this.terminal = process.stdin.isTTY === true && io.interactive;
    // Tab completes a slash command.
    const completer = (line: string): [string[], string] => [line.startsWith('/') ? COMMANDS.map(([name]) => name).filter((name) => name.startsWith(line)) : [], line];
    this.input = this.terminal ? filteredTerminalInput(process.stdin) : undefined;
    this.rl = createInterface({ input: this.input ?? process.stdin, output: io.out, terminal: this.terminal, prompt: io.c.cyan('› '), completer });
    if (this.input) io.out.write(BRACKETED_PASTE_ON);
  }

  run(): Promise<number> {
    const { c } = this.io;
    const header = this.session?.state.header?.config;
    const defaults = this.harness.config.defaults;
    const model = this.options.call.provider
      ? `${this.options.call.provider}/${this.options.call.model}`
      : header
        ? `${header.provider}/${header.model}`
        : defaults
          ? `${defaults.provider}/${defaults.model}`
          : 'no default model';
    const which = this.session ? `session ${this.session.id}` : 'new session (its journal starts with the first prompt)';
    this.io.out.write(
      `${c.bold('harness chat')} ${c.dim(`· ${which} · ${model} · approvals ${this.options.approve ?? this.harness.ctx.approvals?.defaultPolicy ?? 'deny-all (no approvals plugin)'}`)}\n${c.dim('Ctrl-C cancels a turn · Ctrl-C twice or Ctrl-D quits · /help')}\n${this.options.recap ?? ''}`,
    );
    return new Promise<number>((resolveExit) => {
      this.exit = resolveExit;
      this.rl.on('line', (edited) => {
        const line = fromEditedLine(edited);
        if (this.handling) this.queue.push(line);
        else void this.drain(line);
      });
      this.rl.on('SIGINT', () => this.interrupt());
      const onSignal = () => this.interrupt();
      process.on('SIGINT', onSignal);
      this.rl.on('close', () => {
        process.off('SIGINT', onSignal);
        this.eof = true;
        if (!this.handling && this.queue.length === 0) void this.quit(0);
      });
      this.prompt();
    });
  }

  /** SIGTERM, SIGHUP or a closed output: cancel the running turn like Ctrl-C, then quit. */
  async stop(request: StopRequest): Promise<void> {
    this.stopRequest = request;
    if (this.running && request.cause !== 'EPIPE') this.running.renderer.line(this.io.c.yellow(`${request.label}: cancelling the turn…`));
    this.cancelledBy ??= request.label;
    await this.quit(request.exitCode);
  }

  /** Closes the session's journal (flushed, its lock released). */
  async close(): Promise<void> {
    await this.session?.close().catch(() => undefined);
  }

  /** Prints a line without tearing the prompt or a streaming reply apart. */
  notify(line: string): void {
    if (this.running) {
      this.running.renderer.notice(line);
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

  /** Handles `first`, then every line that came meanwhile, in order; then the prompt (or quits at the end of input). */
  private async drain(first: string): Promise<void> {
    this.handling = true;
    try {
      for (let line: string | undefined = first; line !== undefined && !this.closing; line = this.queue.shift()) await this.handle(line);
    } finally {
      this.handling = false;
    }
    if (this.closing) return;
    if (this.eof) return this.quit(0);
    this.prompt();
  }

  private async handle(line: string): Promise<void> {
    const text = line.trim();
    this.armed = false;
    if (!this.terminal) this.io.out.write(`${line}\n`); // piped input: show what was sent after its prompt
    if (text === '') return;
    const command = COMMAND_LINE.exec(text);
    if (!command) return this.turn(text);
    if (command[1] === 'exit' || command[1] === 'quit') return this.quit(0);
    await this.command(command[1]!, (command[2] ?? '').trim()).catch((error: unknown) => {
      this.io.out.write(`${this.io.c.red(`error${HarnessError.is(error) ? ` ${error.code}` : ''}:`)} ${oneLine(error instanceof Error ? error.message : String(error), 400)}\n`);
    });
  }

  /**
   * A slash command (see {@link COMMANDS}).
   * @throws HarnessError `UNKNOWN_COMMAND` (listing the commands), `INVALID_ARGUMENTS`, or what
   * checking a new model throws (`UNKNOWN_MODEL`, `AUTH`, …).
   */
  private async command(name: string, args: string): Promise<void> {
    const { c } = this.io;
    const out = (text: string) => this.io.out.write(`${text}\n`);
    switch (name) {
      case 'help':
        return void out(HELP);
      case 'session':
        if (this.session) out(`${c.dim('session')} ${this.session.id}\n${sessionHints(this.session, this.harness.dataDir, this.globals, this.io)}`);
        else out(c.dim('no session yet: it starts with the first prompt'));
        return;
      case 'model': {
        if (args === '') return void out(`model ${this.currentModel()} ${c.dim('(/model [provider/]model switches)')}`);
        const slash = args.indexOf('/');
        const asked = slash > 0 ? { provider: args.slice(0, slash), model: args.slice(slash + 1) } : { model: args };
        const provider = asked.provider ?? this.options.call.provider ?? this.session?.state.header?.config.provider ?? this.harness.config.defaults?.provider ?? 'scripted';
        // Checked like --model (unknown model, missing key) before the next request is affected.
        const call = await resolveCall(this.harness, { provider, model: asked.model }, this.session);
        this.options.call = call;
        this.options.callChecked = true;
        return void out(c.green(`model ${call.provider}/${call.model} — the next request uses it`));
      }
      case 'approve': {
        if (!(POLICIES as readonly string[]).includes(args))
          throw new HarnessError('INVALID_ARGUMENTS', `/approve takes a policy: ${POLICIES.join(', ')} (now: ${this.options.approve ?? this.harness.ctx.approvals?.defaultPolicy ?? 'deny-all'}).`);
        makeApprover(this.harness, args, undefined); // needs the approvals plugin: fails here, not at the next tool call
        this.options.approve = args;
        return void out(c.green(`approvals ${args} from now on`));
      }
      case 'cost':
        return void out(this.tally ? c.dim(this.tally.footer(this.harness, this.io)) : c.dim('no turn yet'));
      case 'tools': {
        const tools = this.harness.tools.describe();
        return void out(tools.length ? tools.map((t) => `  ${t.name} ${c.dim(`(${t.owner})`)}`).join('\n') : c.dim('no tools are loaded'));
      }
      case 'sessions': {
        const workspace = this.options.cwd ?? this.session?.session.cwd ?? process.cwd();
        const sessions = (await sessionsOfWorkspace(this.harness.store, workspace)).slice(0, 10);
        if (sessions.length === 0) return void out(c.dim(`no sessions of ${workspace} yet`));
        for (const s of sessions)
          out(`  ${s.id.slice(0, 8)}  ${oneLine(s.title ?? '(untitled)', 48).padEnd(48)}  ${c.dim(`${s.turnCount} turn${s.turnCount === 1 ? '' : 's'} · ${formatAgo(s.lastUpdateAtMs)}`)}`);
        return void out(c.dim('go on in one with /resume <id>'));
      }
      case 'resume':
        return this.resume(args);
      case 'fork':
        return this.fork(args);
      case 'compact':
        return this.compact();
      default:
        throw new HarnessError('UNKNOWN_COMMAND', `/${name} is not a chat command (nothing was sent to the model). Commands: ${COMMANDS.map(([n]) => n).join(' ')}.`);
    }
  }

  /** `provider/model` the next request uses. */
  private currentModel(): string {
    const { provider, model } = this.currentCall();
    return `${provider}/${model}`;
  }

  /** The provider and model the next request uses. */
  private currentCall(): { provider: string; model: string } {
    const header = this.session?.state.header?.config;
    const defaults = this.harness.config.defaults;
    const { provider, model } = this.options.call;
    if (provider && model) return { provider, model };
    if (header) return { provider: header.provider, model: header.model };
    return { provider: defaults?.provider ?? 'scripted', model: defaults?.model ?? 'scripted-default' };
  }

  /**
   * `/resume <session>`: the chat goes on in another session (its last turns printed first), with
   * that session's model; the current one is closed. Nothing changes when the other cannot be opened.
   */
  private async resume(args: string): Promise<void> {
    const { c } = this.io;
    if (args === '') throw new HarnessError('INVALID_ARGUMENTS', "/resume takes a session: its id, a unique start of it, or a journal path (/sessions lists this workspace's).");
    const path = await sessionRef(args, this.harness);
    if (this.session && resolve(refOfSession(this.harness, this.session)) === resolve(path)) return void this.io.out.write(`${c.dim(`already in session ${this.session.id}`)}\n`);
    const next = await resumeSession(this.harness, path, this.options.cwd, this.io);
    let call: { provider?: string; model?: string };
    try {
      call = await resolveCall(this.harness, {}, next); // its own model must still be there
    } catch (error) {
      await next.close();
      throw error;
    }
    await this.switchTo(next, call);
    this.io.out.write(`${await recapOf(next, this.harness, this.globals, this.io)}${c.green(`resumed session ${next.id} · ${this.currentModel()}`)}\n`);
  }

  /**
   * `/fork [seq]`: a new session from this one's events 1..seq (default: all of them), and the chat
   * goes on in it with the same model; the original stays as it was.
   * @throws HarnessError `FORK_INSIDE_TURN` naming the nearest seqs a fork may take, `FORK_OUT_OF_RANGE`.
   */
  private async fork(args: string): Promise<void> {
    const { c } = this.io;
    const source = this.session;
    if (source === undefined) throw new HarnessError('NO_SESSION', 'There is no session to fork yet: it starts with the first prompt.');
    if (args !== '' && !/^\d+$/.test(args)) throw new HarnessError('INVALID_ARGUMENTS', `/fork takes a seq (a whole number, e.g. /fork 12) or nothing; got "${oneLine(args, 40)}".`);
    const atSeq = args === '' ? source.state.lastSeq : Number(args);
    await source.session.checkpoint(); // the fork reads the store: every event written so far must be in it
    let forked: Awaited<ReturnType<typeof forkSession>>;
    try {
      forked = await forkSession(refOfSession(this.harness, source), { atSeq, store: this.harness.store, bus: this.harness.kernel.bus });
    } catch (error) {
      if (HarnessError.is(error) && error.code === 'FORK_INSIDE_TURN') {
        throw new HarnessError('FORK_INSIDE_TURN', await forkInsideTurnMessage(sourceOfSession(this.harness, source), atSeq, { session: source.id, retry: (seq) => `/fork ${seq}` }), {
          details: { ...error.failure },
        });
      }
      throw error;
    }
    await forked.journal.close();
    const next = (await this.harness.openSession(forked.journal.id, this.options.cwd ? { cwd: this.options.cwd } : {})).session;
    await this.switchTo(next, this.options.call);
    this.io.out.write(`${c.green(`forked ${source.id} at seq ${atSeq} → ${next.id}`)} ${c.dim(`— the chat goes on in the fork; /resume ${source.id.slice(0, 8)} goes back`)}\n`);
  }

  /** `/compact`: the compaction plugin summarises the older turns now; one line says what happened. */
  private async compact(): Promise<void> {
    const { c } = this.io;
    const compaction = this.harness.ctx.compaction;
    if (compaction === undefined) {
      throw new HarnessError(
        'NO_COMPACTION_PLUGIN',
        "/compact needs the compaction plugin, which the config does not load; add { module: 'harness-runtime/plugins/compaction' } to its plugins (defaultPlugins() from 'harness-runtime/stack' includes it).",
      );
    }
    const session = this.session;
    if (session === undefined) return void this.io.out.write(`${c.dim('nothing to compact: no session yet')}\n`);
    const prepared = await this.harness.llm.prepareCall({ ...this.currentCall(), ...(this.options.reasoningEffort ? { reasoningEffort: this.options.reasoningEffort } : {}) });
    const before = session.state.messages.length;
    const controller = new AbortController();
    this.commandController = controller;
    this.io.out.write(`${c.dim(`compacting ${before} messages with ${this.currentModel()}…`)}\n`);
    let result: Awaited<ReturnType<typeof compaction.compact>>;
    try {
      result = await compaction.compact(session.session, prepared, { signal: controller.signal });
    } finally {
      this.commandController = undefined;
    }
    if (result.outcome === 'compacted') this.io.out.write(`${c.green(`compacted: ${before} messages → ${result.messageCount} (a summary, then the turns kept verbatim)`)}\n`);
    else if (result.outcome === 'skipped') this.io.out.write(`${c.dim('nothing to compact: there are no turns older than the ones kept verbatim')}\n`);
    else
      this.io.out.write(
        `${c.red(`compaction failed — ${printable(result.failure?.code ?? 'UNKNOWN')}: ${oneLine(result.failure?.message ?? 'no summary', 300)}`)} ${c.dim('(the context is unchanged)')}\n`,
      );
  }

  /** The chat goes on in `next`: the current session is closed; its tally and "always" answers are left behind. */
  private async switchTo(next: AgentSession, call: { provider?: string; model?: string }): Promise<void> {
    const previous = this.session;
    this.session = next;
    this.options.call = call;
    this.tally = await UsageTally.of(sourceOfSession(this.harness, next));
    this.allowances.clear();
    await previous?.close().catch(() => undefined);
  }

  private async turn(prompt: string): Promise<void> {
    const { c } = this.io;
    const blocked = this.options.blocked?.();
    if (blocked !== undefined) return void this.io.out.write(`${c.red('error PLUGIN_NOT_LOADED:')} ${blocked}\n`);
    const tooLarge = promptTooLarge(Buffer.byteLength(prompt), this.options.maxPromptBytes);
    if (tooLarge) return void this.io.out.write(`${c.red(`error ${tooLarge.code}:`)} ${tooLarge.message}\n`);
    if (!this.options.callChecked) {
      try {
        this.options.call = await resolveCall(this.harness, this.options, this.session);
        this.options.callChecked = true;
      } catch (error) {
        return void this.io.out.write(`${c.red(`error${HarnessError.is(error) ? ` ${error.code}` : ''}:`)} ${oneLine(error instanceof Error ? error.message : String(error), 400)}\n`);
      }
    }
    const controller = new AbortController();
    const renderer = new LiveRenderer(this.io, this.options.markdown ? { markdown: this.options.markdown } : {});
    this.cancelledBy = undefined;
    const ask: Ask | undefined = this.terminal ? this.allowances.ask((request) => this.ask(request, renderer, controller.signal)) : undefined;
    const approve = this.allowances.approver(makeApprover(this.harness, this.options.approve, ask));
    const done = (async () => {
      try {
        if (this.closing) return; // quit while the prompt was being sent: no session for it
        if (this.session === undefined) {
          // The first prompt of a new session: its journal starts now.
          this.session = await this.harness.createSession(this.options.cwd ? { cwd: this.options.cwd } : {});
          this.tally = new UsageTally();
          await this.session.session.append('session/title', { title: titleOf(prompt) });
        }
        const session = this.session;
        this.tally ??= await UsageTally.of(sourceOfSession(this.harness, session)); // a resumed session: its past, from the journal
        this.tally.startTurn();
        if (this.closing) return;
        for await (const event of session.run(prompt, {
          signal: controller.signal,
          approve,
          ...this.options.call,
          ...(this.options.reasoningEffort ? { reasoningEffort: this.options.reasoningEffort } : {}),
        })) {
          renderer.event(event);
          this.tally.add(event);
        }
      } catch (error) {
        renderer.line(c.red(`error${HarnessError.is(error) ? ` ${error.code}` : ''}: ${oneLine(error instanceof Error ? error.message : String(error), 400)}`));
      }
      renderer.finish();
      const end = renderer.lastTurnEnd?.data;
      if (end?.reason === 'error') {
        this.io.out.write(`${c.red(`error ${printable(end.failure?.code ?? 'UNKNOWN')}:`)} ${printable(end.failure?.message ?? 'the turn failed')}\n`);
        const hint = failureHint(end.failure);
        if (hint) this.io.out.write(`${c.dim(`hint: ${hint}`)}\n`);
      } else if (end?.reason === 'aborted')
        this.io.out.write(c.yellow(this.stopRequest ? `cancelled — the turn was aborted (${this.stopRequest.label})\n` : 'cancelled — the turn was aborted; the session goes on\n'));
      else if (end?.reason === 'max-tokens') this.io.out.write(c.yellow('the reply hit the output limit (max-tokens)\n'));
      if (this.tally && end) this.io.out.write(`${c.dim(this.tally.footer(this.harness, this.io))}\n\n`);
    })();
    this.running = { controller, done, renderer };
    try {
      await done;
    } finally {
      this.running = undefined;
    }
  }

  private async ask(request: ApprovalRequest, renderer: LiveRenderer, signal: AbortSignal): Promise<AskAnswer> {
    await renderer.askingAbout(request);
    renderer.pause();
    renderer.breakLine();
    const cancelled = () => ({ none: this.cancelledBy ?? 'the turn was cancelled' });
    if (signal.aborted) return { allow: false, reason: `no answer (${cancelled().none})` };
    return askInTerminal(
      request,
      this.io,
      (prompt) =>
        new Promise((done) => {
          if (signal.aborted) return done(cancelled());
          if (this.eof) return done({ none: 'end of input' });
          const settle = (reply: { text: string } | { none: string }) => {
            signal.removeEventListener('abort', onAbort);
            this.rl.off('close', onClose);
            done(reply);
          };
          const onAbort = () => {
            this.io.out.write('\n');
            settle(cancelled());
          };
          const onClose = () => settle({ none: 'end of input' }); // Ctrl-D at the question
          signal.addEventListener('abort', onAbort, { once: true });
          this.rl.once('close', onClose);
          this.rl.question(prompt, { signal }, (text) => settle({ text }));
        }),
      this.session?.session.cwd,
    );
  }

  private interrupt(): void {
    if (this.closing) return;
    if (this.armed) {
      void this.quit(0);
      return;
    }
    if (this.commandController) {
      this.armed = true;
      this.commandController.abort(new HarnessError('ABORTED', 'The command was cancelled (Ctrl-C).'));
      this.io.out.write(`\n${this.io.c.yellow('^C cancelling the command (Ctrl-C again to quit)')}\n`);
      return;
    }
    if (this.running) {
      this.armed = true;
      this.cancelledBy ??= 'Ctrl-C';
      this.running.controller.abort(new HarnessError('ABORTED', 'The turn was cancelled (Ctrl-C).'));
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
      running.controller.abort(new HarnessError('ABORTED', `The turn was cancelled (${this.stopRequest?.label ?? 'quit'}).`));
      await running.done.catch(() => undefined);
    }
    this.rl.close();
    if (this.input) {
      this.io.out.write(BRACKETED_PASTE_OFF);
      this.input.detach();
    }
    if (this.session) this.io.out.write(`\n${sessionHints(this.session, this.harness.dataDir, this.globals, this.io)}\n`);
    else this.io.out.write(`\n${this.io.c.dim('no prompt was sent: no session was created')}\n`);
    await this.close();
    this.exit(this.stopRequest?.exitCode ?? code);
  }
}
