/**
 * `harness run "<prompt>"`: one turn, streamed — reasoning dimmed, text, tool calls with the first
 * lines of their results, retries — then a footer with tokens and cost, the journal path and the
 * replay command. Exit code: 0 completed (or max-tokens), 1 error, 130 cancelled (Ctrl-C).
 */
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import type { AgentSession, ApprovalRequest, Harness } from '../../index.ts';
import type { Io } from '../env.ts';
import { LiveRenderer, usageFooter } from '../render.ts';
import { approvalQuestion, isYes, makeApprover, openHarness, resolveCall, sessionHints, titleOf, type Ask, type GlobalOptions, type TurnOptions } from '../setup.ts';

export async function runCommand(prompt: string, options: TurnOptions, globals: GlobalOptions, io: Io): Promise<number> {
  const harness = await openHarness(globals, io);
  try {
    return await runTurn(harness, prompt, options, globals, io);
  } finally {
    await harness.dispose();
  }
}

async function runTurn(harness: Harness, prompt: string, options: TurnOptions, globals: GlobalOptions, io: Io): Promise<number> {
  const cwd = options.cwd ? resolve(options.cwd) : undefined;
  let session: AgentSession;
  let call: { provider?: string; model?: string };
  if (options.resume) {
    const opened = await harness.openSession(options.resume, cwd ? { cwd } : {});
    session = opened.session;
    const repairs = opened.repairs;
    if (repairs.tornTail) io.err.write(io.c.yellow(`repaired: a torn last line (${repairs.tornTail.byteCount} bytes) was moved to ${repairs.tornTail.sidecarPath}\n`));
    if (repairs.syntheticEvents.length) io.err.write(io.c.yellow(`repaired: ${repairs.syntheticEvents.length} synthetic event(s) closed an interrupted turn\n`));
    call = await resolveCall(harness, options, session);
  } else {
    call = await resolveCall(harness, options); // fails fast, before a journal exists
    session = await harness.createSession(cwd ? { cwd } : {});
    await session.session.append('session/title', { title: titleOf(prompt) });
  }
  const renderer = new LiveRenderer(io);
  const ask: Ask | undefined = process.stdin.isTTY && io.interactive ? (request) => askOnce(request, io, renderer) : undefined;
  const approve = makeApprover(harness, options.approve ?? 'read-only', ask);
  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts === 1) {
      renderer.line(io.c.yellow('^C cancelling the turn… (Ctrl-C again to quit at once)'));
      controller.abort();
    } else {
      renderer.finish();
      process.exit(130);
    }
  };
  process.on('SIGINT', onSigint);
  try {
    for await (const event of session.run(prompt, {
      signal: controller.signal,
      approve,
      ...call,
      ...(options.reasoningEffort ? { reasoningEffort: options.reasoningEffort } : {}),
    })) {
      renderer.event(event);
    }
  } finally {
    process.off('SIGINT', onSigint);
    renderer.finish();
  }
  const end = renderer.lastTurnEnd;
  const reason = end?.data.reason ?? 'error';
  const failure = end?.data.failure;
  const quiet = reason === 'error' && renderer.messageCount === 0;
  if (reason === 'error') io.err.write(`${io.c.red(`error ${failure?.code ?? 'UNKNOWN'}:`)} ${failure?.message ?? 'the turn failed'}\n`);
  else if (reason === 'aborted') io.err.write(io.c.yellow('cancelled: the turn was aborted\n'));
  else if (reason === 'max-tokens') io.err.write(io.c.yellow('note: the reply hit the model\'s output limit (max-tokens); resume to continue\n'));
  if (!quiet) {
    io.out.write(`\n${io.c.dim(usageFooter(harness, session.id, renderer.usage, io))}\n`);
    io.out.write(`${sessionHints(session, globals, io)}\n`);
  } else if (globals.debug) {
    io.err.write(io.c.dim(`journal ${session.path}\n`));
  }
  return reason === 'error' ? 1 : reason === 'aborted' ? 130 : 0;
}

/** One y/n question on the terminal (run is not a REPL: a readline lives for the question only). */
async function askOnce(request: ApprovalRequest, io: Io, renderer: LiveRenderer): Promise<boolean> {
  await renderer.whenShown(request.callId);
  renderer.pause();
  renderer.breakLine();
  return new Promise((done) => {
    const rl = createInterface({ input: process.stdin, output: io.out, terminal: true });
    let answered = false;
    rl.on('SIGINT', () => {
      answered = true;
      rl.close();
      io.out.write('\n');
      done(false);
      process.emit('SIGINT');
    });
    rl.question(approvalQuestion(request, io), (answer) => {
      answered = true;
      rl.close();
      done(isYes(answer));
    });
    rl.on('close', () => {
      if (!answered) done(false);
    });
  });
}
