/**
 * `harness run "<prompt>"`: one turn, streamed — reasoning dimmed, text, tool calls with the first
 * lines of their results, retries — then a footer with tokens and cost (this turn and the whole
 * session), the journal path and the replay command. Exit code: 0 completed (or max-tokens), 1 error,
 * 2 usage (a bad command line, an empty prompt), 130 cancelled (Ctrl-C), 128 + n for a signal (143
 * SIGTERM, 129 SIGHUP; see lifecycle.ts).
 *
 * `harness run -` reads the prompt from stdin (to its end). A prompt over `--max-prompt-bytes` (default
 * 1 MiB, serve's body limit) is refused, `PROMPT_TOO_LARGE` (exit 2), before anything is journaled. `--json` prints, instead of the
 * transcript, the journal's records as they are written, one JSON object per line and nothing else
 * on stdout: first the journal's header line (`{"type":"session","version":1,"id",…}`), then every
 * event this command appends (`{seq, type, atMs, data}`, exactly as in the journal file; for a new
 * session from `session/title` to `turn/end`) — so for a new session the output equals
 * `harness replay --json <id>`. Errors and notices go to stderr; nobody is asked for approvals (the
 * policy decides alone).
 *
 * Nothing is journaled before the prompt, the workspace and the call (provider, model, reasoning
 * effort, the adapter's preflight: a missing key) have been checked.
 */
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import { HarnessError, type AgentSession, type AnySessionEvent, type ApprovalRequest, type Harness, type SessionEvent } from '../../runtime/index.ts';
import { askInTerminal, SessionAllowances, type Ask, type AskAnswer } from '../approval.ts';
import { sessionToResume } from '../find-session.ts';
import { shellQuote, type Io } from '../env.ts';
import { printable } from '../format.ts';
import { exitAfterFlush, holdExitUntil, onStop, SECOND_STOP_FLUSH_MS, type StopRequest } from '../lifecycle.ts';
import { markdownFor } from '../markdown.ts';
import { checkPromptSize, readPrompt } from '../prompt.ts';
import { LiveRenderer } from '../render.ts';
import {
  checkWorkspace,
  makeApprover,
  openHarness,
  refOfSession,
  resolveCall,
  selfWithGlobals,
  sessionArgument,
  sessionHeader,
  sessionHints,
  sessionRef,
  sourceOfSession,
  titleOf,
  type GlobalOptions,
  type TurnOptions,
} from '../setup.ts';
import { UsageTally } from '../usage.ts';

export interface RunOptions extends TurnOptions {
  /** One JSON object per journal record on stdout, nothing else (see the module doc). */
  readonly json?: boolean;
}

export async function runCommand(promptArgument: string, options: RunOptions, globals: GlobalOptions, io: Io): Promise<number> {
  const fromStdin = promptArgument === '-';
  if (fromStdin && process.stdin.isTTY) io.err.write(io.c.dim('reading the prompt from stdin; end it with Ctrl-D\n'));
  const prompt = fromStdin ? await readPrompt(process.stdin, options.maxPromptBytes) : promptArgument;
  if (!fromStdin) checkPromptSize(Buffer.byteLength(prompt), options.maxPromptBytes);
  if (prompt.trim() === '') throw new HarnessError('EMPTY_PROMPT', 'The prompt is empty; say what the agent should do, e.g. harness run "What is in this workspace?".');
  const cwd = options.cwd ? checkWorkspace(resolve(options.cwd), '--cwd') : undefined;
  const harness = await openHarness(globals, io);
  try {
    return await runTurn(harness, prompt, { ...options, ...(cwd ? { cwd } : {}) }, globals, io, { canAsk: !fromStdin && options.json !== true });
  } finally {
    await harness.dispose();
  }
}

/**
 * The CLI's hint for a failed turn, when it knows a better way: a 404 from the Responses API (the
 * built-in `openai` route, or any `/responses` URL) means the server speaks only Chat Completions.
 */
export function failureHint(failure: { readonly code: string; readonly message: string; readonly [key: string]: unknown } | undefined): string | undefined {
  if (failure === undefined || failure.status !== 404) return undefined;
  if (failure.provider === 'openai' || /\/responses\b/.test(failure.message)) {
    return "this server has no Responses API (/responses answered 404). An OpenAI-compatible server speaks Chat Completions: use --provider openai-compatible with OPENAI_COMPATIBLE_BASE_URL=<its /v1 URL>, or a provider of the config with api: 'chat'.";
  }
  return undefined;
}

/** What a run shows its events with: the live transcript, or (`--json`) the journal's records. */
interface RunOutput {
  event(event: AnySessionEvent): void;
  /** A notice of its own (a cancellation): stdout for the transcript, stderr beside JSON. */
  line(text: string): void;
  finish(): void;
  readonly messageCount: number;
  readonly lastTurnEnd: SessionEvent<'turn/end'> | undefined;
}

/** `--json`: each record as one line of JSON, exactly as journaled. */
class JsonRecords implements RunOutput {
  messageCount = 0;
  lastTurnEnd: SessionEvent<'turn/end'> | undefined;
  constructor(private readonly io: Io) {}
  record(record: unknown): void {
    this.io.out.write(`${JSON.stringify(record)}\n`);
  }
  event(event: AnySessionEvent): void {
    if (event.type === 'assistant/message') this.messageCount++;
    if (event.type === 'turn/end') this.lastTurnEnd = event as SessionEvent<'turn/end'>;
    this.record(event);
  }
  line(text: string): void {
    this.io.err.write(`${text}\n`);
  }
  finish(): void {}
}

/**
 * The journal `--resume` / `--continue` name (see find-session.ts), or undefined for a new session.
 * `-c` looks in the workspace of the run: `--cwd`, else the current directory.
 */
export function journalToResume(harness: Harness, options: TurnOptions, io: Io): Promise<string | undefined> {
  return sessionToResume(options, { sessions: harness.store, workspace: options.cwd ?? process.cwd(), io, resolveArgument: (argument) => sessionRef(argument, harness) });
}

/** Opens the session of the journal `path`, checking first that its workspace still exists (unless --cwd gives another). */
export async function resumeSession(harness: Harness, path: string, cwd: string | undefined, io: Io): Promise<AgentSession> {
  if (cwd === undefined) {
    const header = await sessionHeader(harness, path);
    if (header.cwd !== undefined) checkWorkspace(header.cwd, 'session');
  }
  const opened = await harness.openSession(path, cwd ? { cwd } : {});
  const repairs = opened.repairs;
  if (repairs.tornTail) io.err.write(io.c.yellow(`repaired: a torn last line (${repairs.tornTail.byteCount} bytes) was moved to ${repairs.tornTail.sidecarPath}\n`));
  if (repairs.syntheticEvents.length) io.err.write(io.c.yellow(`repaired: ${repairs.syntheticEvents.length} synthetic event(s) closed an interrupted turn\n`));
  return opened.session;
}

async function runTurn(harness: Harness, prompt: string, options: RunOptions, globals: GlobalOptions, io: Io, mode: { canAsk: boolean }): Promise<number> {
  const controller = new AbortController();
  /** How the turn was cancelled, for the approval prompt and the closing line. */
  let cancelledBy: string | undefined;
  /** The stop request, once one came (set from the stop handler, so read through a function). */
  let stopRequest: StopRequest | undefined;
  const stopped = (): StopRequest | undefined => stopRequest;
  const json = options.json === true ? new JsonRecords(io) : undefined;
  const live = json ? undefined : new LiveRenderer(io, { markdown: await markdownFor(io) });
  const renderer: RunOutput = json ?? live!;
  // Settles once the journal is closed (below): a second SIGTERM/SIGHUP (a closed terminal sends
  // two) waits for it, so the aborted turn's close is journaled before the process exits.
  let journalClosed!: () => void;
  const closing = new Promise<void>((done) => (journalClosed = done));
  // From here on the command holds (or is about to hold) a journal: a stop request aborts the turn.
  const disposeStop = onStop((request) => {
    holdExitUntil(closing);
    stopRequest = request;
    cancelledBy ??= request.label;
    if (request.cause !== 'EPIPE') renderer.line(io.c.yellow(`${request.label}: cancelling the turn…`));
    controller.abort(new HarnessError('ABORTED', `The turn was stopped (${request.label}).`));
  });
  let session: AgentSession | undefined;
  try {
    let call: { provider?: string; model?: string };
    const resume = await journalToResume(harness, options, io);
    if (resume !== undefined) {
      session = await resumeSession(harness, resume, options.cwd, io);
      call = await resolveCall(harness, options, session);
      if (stopped()) return stopped()!.exitCode;
      json?.record(await sessionHeader(harness, refOfSession(harness, session)));
    } else {
      call = await resolveCall(harness, options); // fails fast, before a journal exists
      if (stopped()) return stopped()!.exitCode;
      session = await harness.createSession(options.cwd ? { cwd: options.cwd } : {});
      json?.record(await sessionHeader(harness, refOfSession(harness, session)));
      const title = await session.session.append('session/title', { title: titleOf(prompt) });
      json?.event(title as AnySessionEvent);
    }
    const tally = resume !== undefined ? await UsageTally.of(sourceOfSession(harness, session)) : new UsageTally();
    const workspace = session.session.cwd;
    // "always" at a question holds for the rest of this run.
    const allowances = new SessionAllowances();
    const ask: Ask | undefined =
      live && mode.canAsk && process.stdin.isTTY && io.interactive ? allowances.ask((request) => askOnce(request, io, live, controller.signal, () => cancelledBy, workspace)) : undefined;
    const approve = allowances.approver(makeApprover(harness, options.approve, ask));
    let interrupts = 0;
    const onSigint = () => {
      interrupts++;
      if (interrupts === 1) {
        cancelledBy ??= 'Ctrl-C';
        // No "^C" of our own: the terminal echoes the key itself (ECHOCTL; stdin is not in raw mode here).
        renderer.line(io.c.yellow('cancelling the turn… (Ctrl-C again to quit at once)'));
        controller.abort(new HarnessError('ABORTED', 'The turn was cancelled (Ctrl-C).'));
      } else {
        renderer.finish();
        void exitAfterFlush(130, SECOND_STOP_FLUSH_MS);
      }
    };
    process.on('SIGINT', onSigint);
    try {
      tally.startTurn();
      for await (const event of session.run(prompt, {
        signal: controller.signal,
        approve,
        ...call,
        ...(options.reasoningEffort ? { reasoningEffort: options.reasoningEffort } : {}),
      })) {
        renderer.event(event);
        tally.add(event);
      }
    } finally {
      process.off('SIGINT', onSigint);
      renderer.finish();
    }
    const stop = stopped();
    const end = renderer.lastTurnEnd;
    const reason = end?.data.reason ?? 'error';
    const failure = end?.data.failure;
    const quiet = reason === 'error' && renderer.messageCount === 0;
    if (reason === 'error') {
      io.err.write(`${io.c.red(`error ${printable(failure?.code ?? 'UNKNOWN')}:`)} ${printable(failure?.message ?? 'the turn failed')}\n`);
      const hint = failureHint(failure);
      if (hint) io.err.write(`${io.c.dim(`hint: ${hint}`)}\n`);
      // A plugin's bug (PLUGIN_ERROR) carries its stack: shown with --debug.
      if (globals.debug === true && typeof failure?.stack === 'string') io.err.write(`${io.c.dim(printable(failure.stack))}\n`);
    } else if (reason === 'aborted' && stop?.cause === 'EPIPE') {
      // Like any Unix tool the run stops when its reader goes (`| head`), exiting 0; an agent turn that
      // stops mid-tool-call is worth a line on stderr (dropped too when stderr is the closed pipe).
      const resume = `${selfWithGlobals(globals)} run --resume ${shellQuote(sessionArgument(session.path, harness.dataDir))} "<prompt>"`;
      io.err.write(io.c.yellow(`stopped: the output pipe was closed, so the turn was aborted (journaled; resume with ${resume})\n`));
    } else if (reason === 'aborted') io.err.write(io.c.yellow(`cancelled: the turn was aborted${stop ? ` (${stop.label})` : ''}\n`));
    else if (reason === 'max-tokens') io.err.write(io.c.yellow("note: the reply hit the model's output limit (max-tokens); resume to continue\n"));
    if (json) {
      // stdout carries the records only.
    } else if (!quiet) {
      io.out.write(`\n${io.c.dim(tally.footer(harness, io))}\n`);
      io.out.write(`${sessionHints(session, harness.dataDir, globals, io)}\n`);
    } else {
      // The failed turn is journaled (the prompt too): say where, and how to go on from it.
      io.err.write(
        `${io.c.dim('journal')} ${session.path}\n${io.c.dim('resume ')} ${selfWithGlobals(globals)} run --resume ${shellQuote(sessionArgument(session.path, harness.dataDir))} "<prompt>"\n`,
      );
    }
    if (stopped()) return stopped()!.exitCode;
    return reason === 'error' ? 1 : reason === 'aborted' ? 130 : 0;
  } finally {
    // The journal is closed (flushed, its lock released) before the process may exit on a stop.
    await session?.close().catch(() => undefined);
    journalClosed();
    disposeStop();
  }
}

/**
 * One question on the terminal (run is not a REPL: a readline lives for the question only). Ctrl-C
 * at the question answers no and cancels the turn, as Ctrl-C does anywhere in a run.
 */
async function askOnce(request: ApprovalRequest, io: Io, renderer: LiveRenderer, signal: AbortSignal, cancelledBy: () => string | undefined, workspace: string): Promise<AskAnswer> {
  await renderer.askingAbout(request);
  renderer.pause();
  renderer.breakLine();
  if (signal.aborted) return { allow: false, reason: `no answer (${cancelledBy() ?? 'the turn was cancelled'})` };
  const rl = createInterface({ input: process.stdin, output: io.out, terminal: true });
  try {
    return await askInTerminal(
      request,
      io,
      (prompt) =>
        new Promise((done) => {
          let settled = false;
          const settle = (reply: { text: string } | { none: string }) => {
            if (settled) return;
            settled = true;
            rl.off('SIGINT', onInterrupt);
            rl.off('close', onClose);
            signal.removeEventListener('abort', onAbort);
            done(reply);
          };
          const onInterrupt = () => {
            io.out.write('^C\n');
            settle({ none: 'Ctrl-C' });
            process.emit('SIGINT');
          };
          const onClose = () => settle({ none: 'end of input' });
          const onAbort = () => {
            io.out.write('\n');
            settle({ none: cancelledBy() ?? 'the turn was cancelled' });
          };
          rl.on('SIGINT', onInterrupt);
          rl.on('close', onClose);
          signal.addEventListener('abort', onAbort, { once: true });
          rl.question(prompt, (text) => settle({ text }));
        }),
      workspace,
    );
  } finally {
    rl.close();
  }
}
