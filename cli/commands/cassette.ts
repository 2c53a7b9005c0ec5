/**
 * `harness replay <session> --cassette`: re-runs a recorded session offline and reports any
 * divergence (DESIGN "Replay": a journal as a test cassette).
 *
 * A fresh harness is built with the llm-replay plugin serving the journal's recorded model calls on
 * the alias route `replay`, and a new session is made in a temporary data directory. The recorded
 * prompts are fed turn by turn. Everything outside the model is taken from the recording too, so a
 * re-run is offline, deterministic and has no side effects:
 * - each request asks for the recorded model, system prompt and tool list of its (turn, step);
 * - every recorded tool name exists (as a stub), and an approved call is answered with its recorded
 *   result (the tool never runs: the workspace is not touched);
 * - approvals repeat the recorded decisions; a recorded retry is retried at once;
 * - what other plugins put into the history is put back where the recording has it: messages that
 *   entered mid-turn, and compactions (`compaction/*` and the `surface/replace` that swapped older
 *   messages for a summary) go back in just before the model call they preceded. The compaction
 *   plugin itself is not loaded: its summary call is not a recorded model call, and whether it
 *   fires depends on token estimates and context windows — replaying what it recorded is faithful,
 *   re-deciding it is not;
 * - a turn that was cut short (`aborted` by the user, or `interrupted`: the process died and the
 *   journal's repair closed the turn) is stopped where the recording stops: at the approval that was
 *   answered by Ctrl-C, after the tool call that was running, where the recorded stream ends, or —
 *   failing those — before a model call the recording does not have. A re-run turn that ends
 *   `aborted` there matches a recorded `interrupted` one.
 * What is compared: every request against its recorded call (llm-replay: provider, model, tool names,
 * message count), unconsumed recorded calls, every assistant message (content, finish), every tool
 * result, and every turn's end reason. Any difference is a divergence: exit code 1.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  createHarness,
  defineTool,
  messageText,
  readJournal,
  readJournalHeader,
  recordedCalls,
  type AnySessionEvent,
  type ApprovalAnswer,
  type Harness,
  type RecordedCall,
  type RequestHeader,
  type SessionEvent,
  type ToolSpec,
  type UserMessage,
} from '../../runtime/index.ts';
import { projectRoot, type Io } from '../env.ts';
import { oneLine, printable } from '../format.ts';
import { openHarnessForReading, sessionPath, type GlobalOptions } from '../setup.ts';

/** Events the re-run appends itself where the recording has them (what plugins put into the history). */
const REPLAYED_TYPES = new Set(['user/message', 'compaction/start', 'compaction/summary', 'surface/replace', 'compaction/end']);
type Replayed = { readonly type: string; readonly data: unknown };

interface TurnPlan {
  readonly turn: number;
  /** Messages the turn was started with. */
  readonly input: UserMessage[];
  /** Recorded call index → what entered the history before that call (mid-turn messages, compactions). */
  readonly injected: Map<number, Replayed[]>;
  /** What entered the history after the turn's last call (appended after the turn). */
  readonly trailing: Replayed[];
  /** What entered the history between the previous turn and this one. */
  readonly before: Replayed[];
  readonly reason?: string;
  /** Where a cut-short turn stops: after the tool call with this id ran, or at its approval. */
  readonly cut?: { readonly at: 'execute' | 'approval'; readonly callId: string };
}

type Dsc = string;

/** A recorded `interrupted` turn (the journal's repair after a crash) matches a re-run stopped where the recording was cut. */
function sameEnd(recorded: string | undefined, rerun: string | undefined): boolean {
  return recorded === rerun || (recorded === 'interrupted' && rerun === 'aborted');
}

export async function cassetteCommand(session: string, globals: GlobalOptions, io: Io): Promise<number> {
  // The config's plugins stay loaded while the recording is read: their event types are known.
  const configHarness = await openHarnessForReading(globals, io);
  const temp = mkdtempSync(join(tmpdir(), 'harness-cassette-'));
  // The re-run's data directory goes, however the process ends (a closed pipe or a signal exits at once).
  const removeTemp = () => rmSync(temp, { recursive: true, force: true });
  process.once('exit', removeTemp);
  let rerun: Harness | undefined;
  try {
    const path = sessionPath(session, configHarness.dataDir);
    const header = await readJournalHeader(path);
    const events: AnySessionEvent[] = [];
    for await (const event of readJournal(path)) events.push(event);
    const calls = recordedCalls(events);
    const plans = planTurns(events, calls);
    const { c } = io;
    io.out.write(`${c.bold('cassette')} ${printable(header.id)} ${c.dim(`(${printable(path)})`)}\n${c.dim(`re-running ${plans.length} turn${plans.length === 1 ? '' : 's'} offline: ${calls.length} recorded model call${calls.length === 1 ? '' : 's'} served by llm-replay, recorded tool results and approvals`)}\n`);

    const headers = calls.map((call) => call.header).filter((h): h is RequestHeader => h !== undefined);
    const firstModel = headers[0]?.config.model ?? 'recorded';
    rerun = await createHarness({
      config: {
        defaults: { provider: 'replay', model: firstModel },
        plugins: [{ module: resolve(projectRoot, 'plugins/llm-replay/index.ts'), config: { journal: path, provider: 'replay' } }],
      },
      baseDir: projectRoot,
      dataDir: temp,
    });
    rerun.kernel.bus.add(
      'kernel/diagnostic',
      (d: { level: string; code: string; message: string }) => {
        // Mismatches are collected from the cassette; replay-state notices are expected on an alias route.
        if (d.code === 'CASSETTE_MISMATCH' || d.code === 'INVALID_REPLAY_STATE' || (d.level === 'info' && !globals.debug)) return;
        io.err.write(c.dim(`${d.level} ${d.code}: ${oneLine(d.message, 200)}\n`));
      },
      { owner: 'cli' },
    );
    const cassette = rerun.ctx.cassette!;
    const recordedResults = new Map<string, SessionEvent<'tool/result'>['data']>();
    const recordedDecisions = new Map<string, SessionEvent<'approval/decided'>['data']>();
    for (const event of events) {
      if (event.type === 'tool/result') recordedResults.set(event.data.callId, event.data);
      else if (event.type === 'approval/decided') recordedDecisions.set(event.data.callId, event.data);
    }
    registerStubTools(rerun, events, headers);

    // Each request asks for what the recording asked for at its (turn, step).
    let currentHeader: RequestHeader | undefined = headers[0];
    const firstCall = (turn: number, step: number): RecordedCall | undefined => calls.find((call) => call.turn === turn && call.step === step);
    /** The recorded call the next request at (turn, step) gets. */
    const nextCall = (turn: number, step: number): RecordedCall | undefined => cassette.unconsumed().find((call) => call.turn === turn && call.step === step);
    let plan: TurnPlan | undefined;
    let abortRun: (() => void) | undefined;
    rerun.ctx.on('agent/request', (proposal, next) => {
      // A cut-short turn: a call the recording does not have is where it stopped.
      if ((plan?.reason === 'aborted' || plan?.reason === 'interrupted') && nextCall(proposal.turn, proposal.step) === undefined) abortRun?.();
      const header = firstCall(proposal.turn, proposal.step)?.header ?? currentHeader;
      currentHeader = header;
      if (header === undefined) return next(proposal);
      const tools = Array.isArray(header.tools) ? (header.tools as readonly ToolSpec[]) : proposal.tools;
      const { system: _drop, ...rest } = proposal;
      return next({ ...rest, config: { provider: 'replay', model: header.config.model }, ...(typeof header.system === 'string' ? { system: header.system } : {}), tools });
    });
    // What entered the history mid-turn (messages, compactions) goes back in before the call it preceded.
    const injectedDone = new Set<number>();
    rerun.ctx.on('agent/pre-step', async (payload, next) => {
      const call = nextCall(payload.turn, payload.step);
      const inject = call === undefined ? undefined : plan?.injected.get(call.index);
      if (call === undefined || inject === undefined || injectedDone.has(call.index)) return next(payload);
      injectedDone.add(call.index);
      for (const event of inject) await appendRecorded(payload.session, event);
      return next({ ...payload, messages: payload.session.state.messages });
    });
    // A recorded retry is retried at once (as long as the recording has another call at that step).
    rerun.ctx.on('agent/request-error', (payload, next) => {
      if (payload.failure.code === 'CASSETTE_MISMATCH') return next(payload);
      const more = cassette.unconsumed().some((call) => call.turn === payload.turn && call.step === payload.step);
      return more ? Promise.resolve({ action: 'retry' as const }) : next(payload);
    });
    // Approved calls are answered with their recorded results; the tool never runs.
    const divergences: Dsc[] = [];
    rerun.ctx.on('tools/execute', async (payload) => {
      const recorded = recordedResults.get(payload.callId);
      if (recorded === undefined) {
        divergences.push(`turn ${payload.turn}, step ${payload.step}: tool call ${payload.callId} (${payload.tool.name}) has no recorded result`);
        return { content: [{ type: 'text', text: 'The recording has no result for this call.' }], isError: true, code: 'NOT_RECORDED', durationMs: 0 };
      }
      const block = recorded.message.content.find((b) => b.type === 'tool-result');
      // The call that was running when the turn was cut: the turn stops here (the later calls of the
      // step see the abort before they run, as they did in the recording).
      if (plan?.cut?.at === 'execute' && plan.cut.callId === payload.callId) abortRun?.();
      return {
        content: block && block.type === 'tool-result' ? block.content : [],
        isError: block && block.type === 'tool-result' ? block.isError : true,
        ...(recorded.code ? { code: recorded.code } : {}),
        durationMs: recorded.durationMs ?? 0,
      };
    });
    const approve = (request: { callId: string }): ApprovalAnswer => {
      // The question that was answered by Ctrl-C (or a signal): the turn stops here.
      if (plan?.cut?.at === 'approval' && plan.cut.callId === request.callId) abortRun?.();
      const decision = recordedDecisions.get(request.callId);
      if (decision !== undefined) return { decision: decision.decision, decidedBy: decision.decidedBy, ...(decision.reason ? { reason: decision.reason } : {}) };
      if (recordedResults.get(request.callId)?.code === 'DENIED') return { decision: 'deny', decidedBy: 'replay', reason: 'denied in the recording' };
      return { decision: 'allow', decidedBy: 'replay' };
    };

    const replica = await rerun.createSession({ cwd: temp, id: `cassette-${header.id}`.slice(0, 200).replace(/[^A-Za-z0-9._-]/g, '_') });
    const produced: AnySessionEvent[] = [];
    for (const turnPlan of plans) {
      plan = turnPlan;
      for (const event of turnPlan.before) produced.push(await appendRecorded(replica.session, event));
      const controller = new AbortController();
      abortRun = () => controller.abort();
      let reason: string | undefined;
      for await (const event of replica.run(turnPlan.input, { approve, signal: controller.signal })) {
        produced.push(event);
        if (event.type === 'turn/end') reason = event.data.reason;
      }
      for (const event of turnPlan.trailing) produced.push(await appendRecorded(replica.session, event));
      const same = sameEnd(turnPlan.reason, reason);
      const turnCalls = calls.filter((call) => call.turn === turnPlan.turn).length;
      const note = !same ? c.red(` (recorded: ${turnPlan.reason ?? 'no turn/end'})`) : turnPlan.reason !== reason ? c.dim(` (recorded: ${turnPlan.reason} — stopped where the recording was cut)`) : '';
      io.out.write(`  ${same ? c.green('✓') : c.red('✗')} turn ${turnPlan.turn} ${reason ?? 'did not end'}${note} ${c.dim(`· ${turnCalls} model call${turnCalls === 1 ? '' : 's'}`)}\n`);
      if (!same) divergences.push(`turn ${turnPlan.turn} ended ${reason ?? '(no turn/end)'}; the recording says ${turnPlan.reason ?? '(no turn/end)'}`);
    }
    await replica.close();

    for (const mismatch of cassette.mismatches) divergences.push(`cassette mismatch: ${mismatch}`);
    const unconsumed = cassette.unconsumed();
    if (unconsumed.length) divergences.push(`${unconsumed.length} recorded model call(s) never requested: ${unconsumed.map((call) => `turn ${call.turn} step ${call.step}${call.attempt ? ` attempt ${call.attempt + 1}` : ''} (seq ${call.firstSeq}-${call.lastSeq})`).join(', ')}`);
    divergences.push(...compareMessages(events, produced));
    divergences.push(...compareToolResults(events, produced));

    const recordedMessages = events.filter((e) => e.type === 'assistant/message').length;
    const recordedResultsCount = events.filter((e) => e.type === 'tool/result').length;
    if (divergences.length === 0) {
      io.out.write(`${c.green('same')} ${c.dim(`every model call was requested as recorded and consumed; ${recordedMessages} assistant message${recordedMessages === 1 ? '' : 's'}, ${recordedResultsCount} tool result${recordedResultsCount === 1 ? '' : 's'} and ${plans.length} turn end${plans.length === 1 ? '' : 's'} equal the recording`)}\n`);
      return 0;
    }
    io.out.write(`${c.red(`diverged (${divergences.length})`)}\n`);
    for (const divergence of divergences) io.out.write(`  ${c.red('✗')} ${printable(divergence).split('\n').join('\n    ')}\n`);
    return 1;
  } finally {
    await rerun?.dispose();
    await configHarness.dispose();
    removeTemp();
    process.off('exit', removeTemp);
  }
}

/** Appends a recorded event of the history to the re-run (same type and data). */
async function appendRecorded(session: { append(type: never, data: never): Promise<unknown> }, event: Replayed): Promise<AnySessionEvent> {
  return (await session.append(event.type as never, event.data as never)) as AnySessionEvent;
}

/**
 * Splits the recording into turns: their input, what entered the history mid-turn (keyed by the
 * recorded call it preceded), the reason each ended, and where a cut-short turn stops.
 */
function planTurns(events: readonly AnySessionEvent[], calls: readonly RecordedCall[]): TurnPlan[] {
  const callAt = new Map(calls.map((call) => [call.firstSeq, call.index]));
  const plans: TurnPlan[] = [];
  let before: Replayed[] = [];
  let current:
    | { plan: TurnPlan; started: boolean; pending: Replayed[]; lastChunkSeq: number; decisions: { seq: number; at: 'execute' | 'approval'; callId: string }[] }
    | undefined;
  for (const event of events) {
    if (event.type === 'turn/start') {
      current = { plan: { turn: event.data.turn, input: [], injected: new Map(), trailing: [], before }, started: false, pending: [], lastChunkSeq: 0, decisions: [] };
      before = [];
      plans.push(current.plan);
      continue;
    }
    if (current === undefined) {
      if (REPLAYED_TYPES.has(event.type)) before.push({ type: event.type, data: event.data });
      continue;
    }
    // The user messages right after turn/start are the turn's input; anything else starts the turn.
    if (!current.started && event.type === 'user/message') {
      current.plan.input.push(event.data.message);
      continue;
    }
    current.started = true;
    if (REPLAYED_TYPES.has(event.type)) current.pending.push({ type: event.type, data: event.data });
    else if (event.type === 'assistant/chunk') {
      current.lastChunkSeq = event.seq;
      const index = callAt.get(event.seq);
      if (index !== undefined && current.pending.length) {
        current.plan.injected.set(index, current.pending);
        current.pending = [];
      }
    } else if (event.type === 'approval/decided') current.decisions.push({ seq: event.seq, at: 'approval', callId: event.data.callId });
    else if (event.type === 'tool/start') current.decisions.push({ seq: event.seq, at: 'execute', callId: event.data.callId });
    else if (event.type === 'turn/end') {
      const plan = current.plan as { reason?: string; cut?: TurnPlan['cut'] };
      plan.reason = event.data.reason;
      if (event.data.reason === 'aborted' || event.data.reason === 'interrupted') {
        // The last thing outside the model that happened after the last recorded chunk is where the turn was cut.
        const last = current.decisions.filter((d) => d.seq > current!.lastChunkSeq).at(-1);
        if (last !== undefined) plan.cut = { at: last.at, callId: last.callId };
      }
      current.plan.trailing.push(...current.pending);
      current = undefined;
    }
  }
  return plans;
}

/** A stub for every recorded tool name (from request headers and tool calls): it never runs. */
function registerStubTools(harness: Harness, events: readonly AnySessionEvent[], headers: readonly RequestHeader[]): void {
  const specs = new Map<string, ToolSpec>();
  for (const header of headers) if (Array.isArray(header.tools)) for (const tool of header.tools as readonly ToolSpec[]) if (!specs.has(tool.name)) specs.set(tool.name, tool);
  for (const event of events) if (event.type === 'tool/call' && !specs.has(event.data.name)) specs.set(event.data.name, { name: event.data.name, description: '', inputSchema: { type: 'object' } });
  for (const spec of specs.values()) {
    if (!/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name)) continue; // a call to it is answered UNKNOWN_TOOL: a divergence if the recording ran it
    harness.ctx.tools.register(
      defineTool({
        name: spec.name,
        description: spec.description || `Recorded tool ${spec.name}.`,
        input: { jsonSchema: (spec.inputSchema ?? { type: 'object' }) as Record<string, unknown>, parse: (value: unknown) => value },
        permission: 'read',
        execute: () => {
          throw new Error('a recorded tool never runs in a cassette re-run');
        },
      }),
    );
  }
}

function compareMessages(recorded: readonly AnySessionEvent[], produced: readonly AnySessionEvent[]): string[] {
  const a = recorded.filter((e): e is SessionEvent<'assistant/message'> => e.type === 'assistant/message');
  const b = produced.filter((e): e is SessionEvent<'assistant/message'> => e.type === 'assistant/message');
  const out: string[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const r = a[i];
    const p = b[i];
    if (r === undefined) {
      out.push(`an extra assistant message (turn ${p!.data.turn}, step ${p!.data.step}): "${oneLine(messageText(p!.data.message), 80)}"`);
      continue;
    }
    if (p === undefined) {
      out.push(`recorded assistant message at seq ${r.seq} (turn ${r.data.turn}, step ${r.data.step}) was not produced`);
      continue;
    }
    const where = `assistant message ${i + 1} (recorded seq ${r.seq}, turn ${r.data.turn}, step ${r.data.step})`;
    if (!isDeepStrictEqual(r.data.message.content, p.data.message.content)) {
      out.push(`${where} differs:\n  recorded: "${oneLine(messageText(r.data.message), 100)}"\n  re-run:   "${oneLine(messageText(p.data.message), 100)}"`);
    } else if (r.data.finish.kind !== p.data.finish.kind || Boolean(r.data.interrupted) !== Boolean(p.data.interrupted)) {
      out.push(`${where}: recorded finish ${r.data.finish.kind}${r.data.interrupted ? ' (interrupted)' : ''}, re-run ${p.data.finish.kind}${p.data.interrupted ? ' (interrupted)' : ''}`);
    }
  }
  return out;
}

function compareToolResults(recorded: readonly AnySessionEvent[], produced: readonly AnySessionEvent[]): string[] {
  const results = (events: readonly AnySessionEvent[]) => new Map(events.filter((e): e is SessionEvent<'tool/result'> => e.type === 'tool/result').map((e) => [e.data.callId, e]));
  const a = results(recorded);
  const b = results(produced);
  const out: string[] = [];
  for (const [callId, r] of a) {
    const p = b.get(callId);
    if (p === undefined) out.push(`recorded tool result for ${callId} (seq ${r.seq}) was not produced`);
    else if (!isDeepStrictEqual(r.data.message.content, p.data.message.content)) out.push(`tool result for ${callId} differs: recorded "${oneLine(messageText(r.data.message) || toolText(r), 80)}", re-run "${oneLine(toolText(p), 80)}"`);
  }
  for (const [callId] of b) if (!a.has(callId)) out.push(`an extra tool result for ${callId}`);
  return out;
}

function toolText(event: SessionEvent<'tool/result'>): string {
  const block = event.data.message.content.find((b) => b.type === 'tool-result');
  return block && block.type === 'tool-result' ? block.content.map((p) => (p.type === 'text' ? p.text : '[image]')).join('') : '';
}
