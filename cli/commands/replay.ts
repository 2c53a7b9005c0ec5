/**
 * `harness replay <session|path>`: a readable transcript (`--full`: whole tool outputs, lines uncut); `--json` the raw events; `--at <seq>` the
 * state at that point; `--verify` an integrity check (exit 1 on damage); `--cassette` an offline
 * re-run through llm-replay (exit 1 on divergence, see cassette.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import {
  assembleChunks,
  HarnessError,
  childSessionIndex,
  openSession,
  readJournal,
  recordedCalls,
  type AnySessionEvent,
  type ChildSessionIndex,
  type Harness,
  type OpenedSession,
  type SeqGap,
  type SessionHeader,
  type SessionState,
} from '../../runtime/index.ts';
import { Folder, initialState, liveWriterPid, lockPathOf, unansweredToolCalls } from '../../runtime/internal.ts';
import type { Io } from '../env.ts';
import { formatUsage, oneLine, printable } from '../format.ts';
import { markdownFor } from '../markdown.ts';
import { TranscriptPrinter } from '../render.ts';
import { openHarnessForReading, refOfSession, sessionHeader, sessionRef, sessionSource, type GlobalOptions } from '../setup.ts';

export interface ReplayOptions {
  readonly json?: boolean;
  readonly at?: number;
  readonly verify?: boolean;
  readonly cassette?: boolean;
  readonly salvage?: boolean;
  /** The transcript with whole tool outputs, every line uncut. */
  readonly full?: boolean;
  /** With --cassette (cassette.ts). */
  readonly runTools?: string;
  readonly inject?: readonly string[];
  readonly update?: boolean;
  readonly approve?: string;
}

/**
 * The modes and what each combines with: a transcript (`--json`, `--salvage`), the state at a seq
 * (`--at`, with `--json`), `--verify` alone, `--cassette` alone.
 * @throws HarnessError `INVALID_ARGUMENTS` naming the flags that do not go together.
 */
function checkFlags(options: ReplayOptions): void {
  const set = (name: keyof ReplayOptions) => options[name] !== undefined && options[name] !== false;
  const flag = (name: keyof ReplayOptions) => (name === 'at' ? '--at' : `--${name}`);
  const allowed: Record<string, readonly (keyof ReplayOptions)[]> = { verify: [], cassette: ['runTools', 'inject', 'update', 'approve'], at: ['json'] };
  const cassetteOnly = (['runTools', 'inject', 'update', 'approve'] as const).filter((name) => set(name) && !(name === 'inject' && options.inject?.length === 0));
  if (cassetteOnly.length > 0 && !set('cassette')) {
    const names = { runTools: '--run-tools', inject: '--inject', update: '--update', approve: '--approve' } as const;
    throw new HarnessError(
      'INVALID_ARGUMENTS',
      `${cassetteOnly.map((name) => names[name]).join(', ')} only go${cassetteOnly.length === 1 ? 'es' : ''} with --cassette (an offline re-run); add --cassette.`,
    );
  }
  for (const mode of ['verify', 'cassette', 'at'] as const) {
    if (!set(mode)) continue;
    const others = (['json', 'at', 'verify', 'cassette', 'salvage', 'full'] as const).filter((name) => name !== mode && set(name) && !allowed[mode]!.includes(name));
    if (others.length > 0) {
      const what = mode === 'verify' ? 'an integrity check of the whole journal' : mode === 'cassette' ? 'an offline re-run that prints its own report' : 'the state at one seq (with --json: as JSON)';
      throw new HarnessError('INVALID_ARGUMENTS', `${flag(mode)} cannot be combined with ${others.map(flag).join(' or ')}: ${flag(mode)} is ${what}. Run them one at a time.`);
    }
  }
}

export async function replayCommand(session: string, options: ReplayOptions, globals: GlobalOptions, io: Io): Promise<number> {
  checkFlags(options);
  if (options.cassette) {
    const { cassetteCommand } = await import('./cassette.ts');
    return cassetteCommand(
      session,
      {
        ...(options.runTools !== undefined ? { runTools: options.runTools } : {}),
        ...(options.inject ? { inject: options.inject } : {}),
        ...(options.update ? { update: true } : {}),
        ...(options.approve !== undefined ? { approve: options.approve } : {}),
      },
      globals,
      io,
    );
  }
  // The config's plugins are loaded so that their event types are known to the reader.
  const harness = await openHarnessForReading(globals, io);
  try {
    const path = await sessionRef(session, harness);
    if (options.verify) return await verify(harness, path, io);
    if (options.at !== undefined) return await stateAtSeq(harness, path, options.at, options.json === true, io);
    return await transcript(harness, path, options, io);
  } finally {
    await harness.dispose();
  }
}

/** `path`: a journal path in the file store, a session id in another (see `sessionRef`). */
async function transcript(harness: Harness, path: string, options: ReplayOptions, io: Io): Promise<number> {
  const header = await sessionHeader(harness, path);
  const skipped: string[] = [];
  const onSkip = (line: { lineNumber: number; reason: string }) => skipped.push(`line ${line.lineNumber}: ${line.reason}`);
  // Seqs a salvage read found missing (a line removed or lost): said like a skipped line.
  const missing: string[] = [];
  let missingCount = 0;
  const onGap = (gap: SeqGap) => {
    missingCount += gap.toSeq - gap.fromSeq + 1;
    missing.push(`${gap.toSeq === gap.fromSeq ? `seq ${gap.fromSeq}` : `seqs ${gap.fromSeq}–${gap.toSeq}`} (before line ${gap.lineNumber})`);
  };
  const events = readJournal(sessionSource(harness, path), { ...(options.salvage ? { salvage: true } : {}), onSkip, onGap });
  if (options.json) {
    io.out.write(`${JSON.stringify(header)}\n`);
    for await (const event of events) io.out.write(`${JSON.stringify(event)}\n`);
  } else {
    const printer = new TranscriptPrinter(io, { full: options.full === true, markdown: await markdownFor(io) });
    printer.header(header, harness.store.locationOf(path));
    const usage: Record<string, number> = {};
    let turns = 0;
    let eventCount = 0;
    const children = await ChildTranscripts.of(header.id, harness, io, '      ');
    for await (const event of events) {
      children.before(event);
      printer.event(event);
      children.after(event);
      eventCount++;
      if (event.type === 'turn/start') turns++;
      if (event.type === 'assistant/message' && event.data.usage) for (const [k, v] of Object.entries(event.data.usage)) if (typeof v === 'number') usage[k] = (usage[k] ?? 0) + v;
    }
    children.rest();
    const childUsage = children.usage();
    const rolled = Object.keys(childUsage).length > 0 ? ` · subagents ${formatUsage(childUsage)}` : '';
    // A salvage read says how many lines it left out (each is listed on stderr below).
    const notes = [
      ...(skipped.length > 0 ? [`${skipped.length} corrupt line${skipped.length === 1 ? '' : 's'} skipped`] : []),
      ...(missingCount > 0 ? [`${missingCount} seq${missingCount === 1 ? '' : 's'} missing`] : []),
    ];
    const left = notes.length > 0 ? ` (${notes.join(', ')})` : '';
    io.out.write(`\n${io.c.dim(`${eventCount} event${eventCount === 1 ? '' : 's'}${left} · ${turns} turn${turns === 1 ? '' : 's'} · ${formatUsage(usage)}${rolled}`)}\n`);
  }
  for (const line of skipped) io.err.write(io.c.yellow(`skipped ${printable(line)}\n`));
  for (const gap of missing) io.err.write(io.c.yellow(`missing ${gap}\n`));
  return 0;
}

/**
 * The child sessions (subagents) of a transcript's session, printed indented where the parent ran
 * them: a child's turn at the parent's `subagent/end` that names it (the subagents plugin's record),
 * else — an imported session, a journal without those records — the whole child before the result
 * of the tool call its header names; any child not placed yet after the parent's last event.
 * Grandchildren are printed inside their parent the same way.
 */
class ChildTranscripts {
  private readonly printed = new Set<string>();
  /** Children by the call that spawned them and by id: a parent event looks up its own, not every child (a session with many subagents). */
  private readonly byCallId = new Map<string, ChildTranscripts['children'][number][]>();
  private readonly byId = new Map<string, ChildTranscripts['children'][number]>();

  private constructor(
    private readonly children: readonly { header: SessionHeader; turns: Map<number, AnySessionEvent[]>; lastTurn: number; nested: ChildTranscripts }[],
    private readonly io: Io,
    private readonly indent: string,
  ) {
    for (const child of children) {
      if (!this.byId.has(child.header.id)) this.byId.set(child.header.id, child);
      const callId = child.header.parentSession?.callId;
      if (callId === undefined) continue;
      const list = this.byCallId.get(callId);
      if (list === undefined) this.byCallId.set(callId, [child]);
      else list.push(child);
    }
  }

  /**
   * The children are found and read through the harness's store (any store, not only journal files),
   * from one listing of it for the whole tree (a listing reads every session of the store).
   */
  static async of(parentId: string, harness: Harness, io: Io, indent: string, index?: ChildSessionIndex): Promise<ChildTranscripts> {
    index ??= await childSessionIndex(harness.store);
    const children = [];
    for (const summary of index.get(parentId) ?? []) {
      const ref = refOfSession(harness, summary);
      const turns = new Map<number, AnySessionEvent[]>();
      let turn = 1;
      for await (const event of readJournal(sessionSource(harness, ref))) {
        if (event.type === 'turn/start') turn = event.data.turn;
        const list = turns.get(turn) ?? [];
        list.push(event);
        turns.set(turn, list);
      }
      children.push({ header: await sessionHeader(harness, ref), turns, lastTurn: Math.max(...turns.keys()), nested: await ChildTranscripts.of(summary.id, harness, io, `${indent}      `, index) });
    }
    return new ChildTranscripts(children, io, indent);
  }

  /** Before a parent event: a tool result whose call spawned a child not shown yet shows the child first. */
  before(event: AnySessionEvent): void {
    if (event.type !== 'tool/result') return;
    for (const child of this.byCallId.get(event.data.callId) ?? []) for (const turn of child.turns.keys()) this.print(child, turn);
  }

  /** After a parent event: `subagent/end` shows the child turn it names. */
  after(event: AnySessionEvent): void {
    if ((event.type as string) !== 'subagent/end') return;
    const data = event.data as unknown as { childSessionId?: unknown; childTurn?: unknown };
    const child = typeof data.childSessionId === 'string' ? this.byId.get(data.childSessionId) : undefined;
    if (child !== undefined && typeof data.childTurn === 'number') this.print(child, data.childTurn);
  }

  /** Every child turn not shown yet. */
  rest(): void {
    for (const child of this.children) for (const turn of child.turns.keys()) this.print(child, turn);
  }

  /** Token totals of every child (and theirs). */
  usage(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const child of this.children) {
      for (const events of child.turns.values())
        for (const event of events)
          if (event.type === 'assistant/message' && event.data.usage) for (const [k, v] of Object.entries(event.data.usage)) if (typeof v === 'number') out[k] = (out[k] ?? 0) + v;
      for (const [k, v] of Object.entries(child.nested.usage())) out[k] = (out[k] ?? 0) + v;
    }
    return out;
  }

  private print(child: ChildTranscripts['children'][number], turn: number): void {
    const key = `${child.header.id}\u0000${turn}`;
    const events = child.turns.get(turn);
    if (events === undefined || this.printed.has(key)) return;
    this.printed.add(key);
    const { c } = this.io;
    const printer = new TranscriptPrinter(this.io, { indent: this.indent });
    printer.print(c.magenta(`↳ subagent ${printable(child.header.id)}${child.turns.size > 1 ? ` · turn ${turn}` : ''}`));
    for (const event of events) {
      child.nested.before(event);
      printer.event(event);
      child.nested.after(event);
    }
    if (turn === child.lastTurn) child.nested.rest();
  }
}

async function stateAtSeq(harness: Harness, path: string, seq: number, json: boolean, io: Io): Promise<number> {
  const header = await sessionHeader(harness, path);
  const folder = new Folder(initialState(header.id));
  let last = 0;
  for await (const event of readJournal(sessionSource(harness, path))) {
    if (event.seq > seq) break;
    folder.apply(event);
    last = event.seq;
  }
  if (last < seq) throw new HarnessError('SEQ_OUT_OF_RANGE', `Session ${printable(header.id)} has ${last} events; there is no seq ${seq}.`);
  const state = folder.finish();
  if (json) {
    io.out.write(`${JSON.stringify({ header, atSeq: seq, state })}\n`);
    return 0;
  }
  printState(state, header.id, seq, io);
  return 0;
}

function printState(state: SessionState, id: string, seq: number, io: Io): void {
  const { c } = io;
  const printer = new TranscriptPrinter(io);
  const lines = [`${c.bold('session')} ${printable(id)} ${c.dim(`at seq ${seq}`)}`];
  const h = state.header;
  if (h) {
    lines.push(`${c.dim('model  ')} ${printable(`${h.config.provider}/${h.config.model}${h.config.reasoningEffort ? ` (effort ${h.config.reasoningEffort})` : ''}`)}`);
    if (h.system) lines.push(`${c.dim('system ')} ${oneLine(h.system, 140)}`);
    lines.push(`${c.dim('tools  ')} ${printable(Array.isArray(h.tools) ? h.tools.map((t) => t.name).join(', ') || 'none' : String(h.tools))}`);
  } else lines.push(`${c.dim('model  ')} (no request header yet)`);
  const open = state.openTurn;
  lines.push(
    `${c.dim('turns  ')} ${state.turnCount}${open ? ` · turn ${open.turn} open${open.step ? `, step ${open.step}${open.stepOpen ? ' running' : ''}` : ''}` : state.lastTurnEnd ? ` · last ended ${printable(state.lastTurnEnd.reason)}` : ''}`,
  );
  lines.push(`${c.dim('usage  ')} ${formatUsage(state.usage)}`);
  if (state.pendingToolCalls.length) lines.push(`${c.dim('pending')} ${printable(state.pendingToolCalls.map((p) => `${p.name} (${p.callId}${p.started ? ', started' : ''})`).join(', '))}`);
  if (state.title) lines.push(`${c.dim('title  ')} ${oneLine(state.title, 200)}`);
  lines.push(`${c.dim('messages')} ${state.messages.length}`);
  printer.print(lines.join('\n'));
  for (const [index, message] of state.messages.entries()) printer.message(c.dim(String(index).padStart(5)), message);
}

/**
 * Reads the whole journal strictly (header, every line, contiguous seq, known types), then checks
 * the fold: turns closed, every tool call answered, every assistant message equal to what its
 * chunks assemble to. Lists every problem (a salvage read finds corrupt lines past the first).
 * A journal a live process is writing (its lock's pid is alive) is `being written`, exit 0, when
 * all but its running turn checks out. A journal that is not there is `JOURNAL_NOT_FOUND`, thrown.
 */
async function verify(harness: Harness, ref: string, io: Io): Promise<number> {
  const path = harness.store.locationOf(ref);
  const store = harness.store.kind === 'file' ? {} : { store: harness.store };
  const { c } = io;
  const problems: string[] = [];
  let opened: OpenedSession | undefined;
  try {
    opened = await openSession(ref, { ...store, events: true });
  } catch (error) {
    // A journal that is not there is not a damaged one: the plain not-found error.
    if (!HarnessError.is(error) || error.code === 'JOURNAL_NOT_FOUND') throw error;
    problems.push(`${error.code}: ${printable(error.message)}`);
    if (error.code === 'JOURNAL_CORRUPT' || error.code === 'UNKNOWN_EVENT_TYPE' || error.code === 'INVALID_EVENT_DATA') {
      try {
        opened = await openSession(ref, { ...store, events: true, salvage: true });
        // The first corrupt line is named by the error already (…:<line>: …); a Set of the line
        // numbers named so far keeps many corrupt lines linear.
        const named = new Set(problems.flatMap((p) => [...p.matchAll(/:(\d+):/g)].map((m) => Number(m[1]))));
        for (const line of opened.skipped) {
          if (!named.has(line.lineNumber)) problems.push(`line ${line.lineNumber}: ${printable(line.reason)}`);
        }
      } catch (salvageError) {
        if (!HarnessError.is(salvageError)) throw salvageError;
      }
    }
  }
  // A live writer holds the lock: an open turn, its unanswered calls and a half-written last line are
  // the turn in progress, not damage.
  const writerPid = harness.store.kind === 'file' ? liveWriterPid(lockPathOf(path)) : undefined;
  /** What a running turn leaves open: damage only when no one is writing. */
  const inProgress: string[] = [];
  if (opened !== undefined) {
    const events = opened.events ?? [];
    if (opened.tornTail) inProgress.push(`line ${opened.tornTail.lineNumber}: torn last line (${opened.tornTail.reason}); resuming the session moves it to a sidecar file`);
    problems.push(...structureProblems(events));
    const state = opened.state;
    if (state.openTurn) inProgress.push(`turn ${state.openTurn.turn} never ended (the session crashed); resuming it closes the turn`);
    for (const pending of state.pendingToolCalls) inProgress.push(`tool call ${pending.callId} (${pending.name}, turn ${pending.turn}) has no result`);
    // A Set, not a scan of the pending calls per call: a message of thousands of calls stays linear.
    const pendingIds = new Set(state.pendingToolCalls.map((p) => p.callId));
    for (const call of unansweredToolCalls(state)) {
      if (!pendingIds.has(call.id)) problems.push(`tool call ${call.id} (${call.name}) in the history has no result`);
    }
    for (const call of recordedCalls(events)) {
      const message = call.message;
      if (message === undefined || message.data.interrupted) continue;
      const assembled = assembleChunks(call.chunks);
      if (!isDeepStrictEqual(assembled.content, message.data.message.content)) {
        problems.push(`seq ${message.seq}: assistant/message (turn ${call.turn}, step ${call.step}) differs from what its ${call.chunks.length} chunks assemble to`);
      }
    }
  }
  if (writerPid !== undefined && problems.length === 0 && opened !== undefined) {
    const open = opened.state.openTurn;
    io.out.write(
      `${c.yellow('being written')} ${path} ${c.dim(`(by pid ${writerPid}, which holds its lock)`)}\n${c.dim(
        `${opened.eventCount} events so far, seq 1..${opened.lastSeq} contiguous · messages match their chunks${open ? ` · turn ${open.turn} is running: verify again once it ends` : ''}`,
      )}\n`,
    );
    return 0;
  }
  if (writerPid === undefined) problems.push(...inProgress);
  if (problems.length === 0 && opened !== undefined) {
    const turns = opened.state.turnCount;
    io.out.write(
      `${c.green('ok')} ${path}\n${c.dim(`${opened.eventCount} events, seq 1..${opened.lastSeq} contiguous · ${turns} turn${turns === 1 ? '' : 's'}, all closed · every tool call answered · messages match their chunks`)}\n`,
    );
    return 0;
  }
  io.out.write(`${c.red('damaged')} ${printable(path)}${writerPid === undefined ? '' : c.dim(` (being written by pid ${writerPid}; its running turn is not counted)`)}\n`);
  for (const problem of problems) io.out.write(`  ${c.red('✗')} ${problem}\n`);
  return 1;
}

/** Turn and step bracketing: every turn/start closed by its turn/end before the next one. */
function structureProblems(events: readonly AnySessionEvent[]): string[] {
  const out: string[] = [];
  let turn: number | undefined;
  let step: number | undefined;
  for (const event of events) {
    if (event.type === 'turn/start') {
      if (turn !== undefined) out.push(`seq ${event.seq}: turn ${event.data.turn} starts while turn ${turn} is open`);
      turn = event.data.turn;
    } else if (event.type === 'turn/end') {
      if (turn !== event.data.turn) out.push(`seq ${event.seq}: turn/end of turn ${event.data.turn}, but ${turn === undefined ? 'no turn is open' : `turn ${turn} is open`}`);
      if (step !== undefined) out.push(`seq ${event.seq}: turn ${event.data.turn} ends while step ${step} is open`);
      turn = undefined;
      step = undefined;
    } else if (event.type === 'step/start') {
      if (turn === undefined) out.push(`seq ${event.seq}: step/start outside a turn`);
      if (step !== undefined) out.push(`seq ${event.seq}: step ${event.data.step} starts while step ${step} is open`);
      step = event.data.step;
    } else if (event.type === 'step/end') {
      if (step !== event.data.step) out.push(`seq ${event.seq}: step/end of step ${event.data.step}, but ${step === undefined ? 'no step is open' : `step ${step} is open`}`);
      step = undefined;
    }
  }
  return out;
}
