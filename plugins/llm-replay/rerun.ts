/**
 * A journal as a regression test of your own stack (DESIGN "Replay": cassette; issue 15).
 *
 * `runCassette(journal, { config })` builds a harness from the user's config — every plugin, every
 * middleware, tool, approval policy, compaction and retry layer — and replaces only the model
 * (`harness.llm.replaceModel`): every `llm/stream` dispatch is served from the recording at the
 * innermost position, after all middleware ran on the request. The recorded prompts are fed turn by
 * turn into a new session, and everything the model would see is compared:
 * - each agent request against its recorded call, in order, by the hash of its canonical request
 *   (`request/snapshot`); on a difference the first differing path with both values. Journals
 *   written before snapshots are compared on what they have (the `request/header`: config, system,
 *   tools — `{{…}}` placeholders of imported sessions match anything — and the message count), and
 *   the report says so;
 * - a request with no recorded call left is a divergence (and fails the call); recorded calls never
 *   requested are one too;
 * - compaction summaries are served from the recorded `compaction/summary` events;
 * - tool results: served from the recording by default (tools never touch the workspace), or
 *   re-executed in a scratch copy of a workspace (`runTools`), then compared;
 * - approvals are decided by the current policy (the approvals plugin, `approve` naming the policy);
 *   a person's recorded answers answer its questions; a decision that differs from the recorded one
 *   is a divergence;
 * - every assistant message and every turn's end reason.
 * - subagents: the recording's child sessions (journals whose header's `parentSession` names it,
 *   found next to it: its sessions folder, or a DeepSeek Harness scenario's `session.N.jsonl`) are
 *   re-run too. A real tool that spawns the child (the subagents plugin's `run_subagent`) runs, and
 *   each child session it makes is served its recorded child's calls, tool results and approvals;
 *   for a stub tool (an imported session) the cassette runs the child turns itself. Every check
 *   above holds per session.
 * Faults (`inject`) fail a recorded call's first request (see faults.ts). Message ids and the journal
 * clock are deterministic, so two re-runs write journals equal up to their header. With `update`, a
 * divergent run is kept as a new journal (a fork of the recording, `parent: { sessionId, seq: 0 }`);
 * the recording is never written.
 */
import { closeSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import {
  canonicalRequest,
  createHarness,
  defineTool,
  dshChildCallId,
  firstDifference,
  HarnessError,
  importDshSession,
  LlmAdapter,
  LlmError,
  messageText,
  readJournal,
  readJournalHeader,
  recordedCalls,
  RequestHasher,
  showDifference,
  showValue,
  type AnySessionEvent,
  type ApprovalAnswer,
  type ApprovalRequest,
  type GenerateOptions,
  type Harness,
  type HarnessConfig,
  type RecordedCall,
  type SessionEvent,
  type SessionHeader,
  type StreamChunk,
  type ToolSpec,
  type UserMessage,
} from '../../runtime/index.ts';
import { chunksBefore, describeFault, faultError, parseFault, type Fault } from './faults.ts';
import { matchesRecorded } from './match.ts';

export interface RunCassetteOptions {
  /** The user's harness config: a config module's path, or a config object (module paths resolve from `baseDir`). */
  readonly config?: string | HarnessConfig;
  /** Where a config object's relative module paths resolve from (default: the process's cwd). */
  readonly baseDir?: string;
  /** Re-execute the tool calls in a scratch copy of this workspace folder (default: serve the recorded results). */
  readonly runTools?: string;
  /** Faults on recorded calls: specs (`2:disconnect@3`) or parsed faults. */
  readonly inject?: readonly (string | Fault)[];
  /** Approval policy name (default: the approvals plugin's configured default). */
  readonly approve?: string;
  /** Keep a divergent re-run as a new journal in this data directory (`<dataDir>/sessions/`). */
  readonly update?: { readonly dataDir: string };
  /** Where the re-run's journal is written and kept (default: a temporary folder, removed at the end). */
  readonly dataDir?: string;
  /** Told about the re-run harness's diagnostics (default: ignored). */
  readonly onDiagnostic?: (diagnostic: { level: string; code: string; message: string }) => void;
}

/** What a cassette run found. `same` is true only when nothing diverged. */
export interface CassetteReport {
  readonly same: boolean;
  readonly recording: { readonly id: string; readonly path: string; readonly imported: boolean };
  readonly calls: {
    readonly recorded: number;
    /** Requests served a recorded call. */
    readonly served: number;
    /** Requests compared on their whole canonical request (a `request/snapshot` was recorded). */
    readonly compared: number;
    /** Requests compared only on what an older journal has (request header and message count). */
    readonly comparedOnHeader: number;
    readonly diverged: number;
    readonly injected: number;
  };
  readonly compactions: { readonly recorded: number; readonly served: number };
  readonly toolResults: { readonly recorded: number; readonly served: number; readonly rerun: number };
  /** Child sessions (subagents) recorded with the session, and how many the re-run ran again. */
  readonly subagents: { readonly recorded: number; readonly rerun: number };
  readonly turns: readonly { readonly turn: number; readonly reason?: string; readonly recorded?: string; readonly same: boolean; readonly calls: number }[];
  readonly faults: readonly { readonly call: number; readonly fault: string; readonly where: string }[];
  /** Every divergence, one readable line (or a few) each. */
  readonly divergences: readonly string[];
  /** What the reader should know (older journal, stand-in routes, stub tools, the policy used). */
  readonly notes: readonly string[];
  /** The re-run's journal (kept when `dataDir` was given). */
  readonly rerun: { readonly id: string; readonly path: string };
  /** The fork `update` wrote (only for a divergent run). */
  readonly fork?: { readonly id: string; readonly path: string };
}

/** What the cassette uses of the approvals plugin's `ctx.approvals`. */
interface ApprovalPolicies {
  readonly defaultPolicy: string;
  create(policy: string, options: { ask: (request: ApprovalRequest) => { allow: boolean; reason?: string } }): (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>;
}

interface TurnPlan {
  readonly turn: number;
  readonly input: UserMessage[];
  /** History events between the previous turn and this one (appended before it). */
  readonly before: { readonly type: string; readonly data: unknown }[];
  reason?: string;
  cut?: { readonly at: 'execute' | 'approval'; readonly callId: string };
  /** The recorded call config of the turn's first call. */
  config?: { provider: string; model: string; reasoningEffort?: string };
}

/** Events outside a turn that the re-run appends itself (a prompt queued between turns, a compaction on request). */
const BETWEEN_TURNS = new Set(['user/message', 'compaction/start', 'compaction/summary', 'surface/replace', 'compaction/end']);

/** A recorded session and its recorded children (subagents), by the tool call that spawned each. */
interface Recording {
  readonly header: SessionHeader;
  readonly events: AnySessionEvent[];
  readonly imported: boolean;
  readonly path: string;
  readonly children: Map<string, Recording>;
}

type ParentLink = { sessionId: string; callId?: string };

/**
 * Loads a recording and, recursively, its children found in the same folder. The folder's parent
 * links are read once for the whole tree (`links`): a sessions folder holds every session, and
 * reading each file's header again per recording made K subagents cost K + 1 passes over it.
 */
async function loadRecordingTree(path: string, seen = new Set<string>(), links = new Map<string, Promise<Map<string, ParentLink>>>()): Promise<Recording> {
  const own = await loadRecording(path);
  seen.add(resolve(path));
  const children = new Map<string, Recording>();
  const parentIds = new Set([own.header.id, ...(own.header.importedFrom?.sessionId ? [own.header.importedFrom.sessionId] : [])]);
  const dir = dirname(path);
  let folder = links.get(dir);
  if (folder === undefined) {
    folder = parentLinksIn(dir);
    links.set(dir, folder);
  }
  for (const [file, link] of await folder) {
    if (seen.has(file) || !parentIds.has(link.sessionId)) continue;
    seen.add(file);
    const child = await loadRecordingTree(file, seen, links);
    const callId = link.callId ?? dshChildCallId(own.events, child.events);
    if (callId !== undefined) children.set(callId, child);
  }
  return { ...own, path, children };
}

/** The journals of a folder that name a parent session, in name order: resolved path → link. */
async function parentLinksIn(dir: string): Promise<Map<string, ParentLink>> {
  const out = new Map<string, ParentLink>();
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.jsonl')) continue;
    const file = resolve(dir, name);
    const link = await parentLinkOf(file);
    if (link !== undefined) out.set(file, link);
  }
  return out;
}

/** The parent link of a journal file (ours or a DeepSeek Harness one), read from its first line only. */
async function parentLinkOf(file: string): Promise<ParentLink | undefined> {
  try {
    const header = await readJournalHeader(file);
    return header.parentSession;
  } catch (error) {
    if (!(HarnessError.is(error) && error.code === 'JOURNAL_VERSION')) return undefined;
    try {
      const dsh = JSON.parse(firstLineOf(file)) as { parentSession?: unknown };
      return typeof dsh.parentSession === 'string' ? { sessionId: dsh.parentSession } : undefined;
    } catch {
      return undefined;
    }
  }
}

/** A file's first line, read up to its first line end (not the whole file). */
function firstLineOf(file: string): string {
  const fd = openSync(file, 'r');
  try {
    const chunks: Buffer[] = [];
    const buffer = Buffer.alloc(64 * 1024);
    for (;;) {
      const count = readSync(fd, buffer, 0, buffer.length, null);
      if (count === 0) break;
      const end = buffer.subarray(0, count).indexOf(0x0a);
      chunks.push(Buffer.from(buffer.subarray(0, end === -1 ? count : end)));
      if (end !== -1) break;
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** Loads a recording: a Harness journal, or a DeepSeek Harness session file (imported on the fly). */
async function loadRecording(path: string): Promise<{ header: SessionHeader; events: AnySessionEvent[]; imported: boolean }> {
  let header: SessionHeader;
  try {
    header = await readJournalHeader(path);
  } catch (error) {
    if (!(HarnessError.is(error) && error.code === 'JOURNAL_VERSION')) throw error;
    const imported = await importDshSession(path);
    return { header: imported.header, events: [...imported.events], imported: true };
  }
  const events: AnySessionEvent[] = [];
  for await (const event of readJournal(path)) events.push(event);
  return { header, events, imported: header.importedFrom !== undefined };
}

/**
 * Re-runs a recorded session through the user's stack with the model replaced by the recording.
 * @param journal a journal path (or a DeepSeek Harness session file).
 * @throws what loading the config or reading the journal throws (`CONFIG_NOT_FOUND`, `JOURNAL_NOT_FOUND`, …),
 *   `INVALID_ARGUMENTS` for a bad fault spec or `runTools` folder.
 */
export async function runCassette(journal: string, options: RunCassetteOptions = {}): Promise<CassetteReport> {
  const faults = (options.inject ?? []).map((fault) => (typeof fault === 'string' ? parseFault(fault) : fault));
  if (options.runTools !== undefined && !(existsSync(options.runTools) && statSync(options.runTools).isDirectory())) {
    throw new HarnessError('INVALID_ARGUMENTS', `--run-tools ${options.runTools} is not a folder; name the workspace whose copy the tools run in.`);
  }
  const temp = mkdtempSync(join(tmpdir(), 'harness-cassette-'));
  const dataDir = options.dataDir ?? join(temp, 'data');
  let harness: Harness | undefined;
  try {
    harness = await createHarness({
      ...(typeof options.config === 'string' ? { configPath: options.config } : { config: options.config ?? { plugins: [] }, baseDir: options.baseDir ?? process.cwd() }),
      dataDir,
    });
    harness.kernel.bus.add('kernel/diagnostic', (d: { level: string; code: string; message: string }) => options.onDiagnostic?.(d), { owner: 'cassette' });
    // Read after the plugins loaded: their event types are known.
    const recording = await loadRecordingTree(journal);
    return await rerun(harness, { recording, path: journal, faults, options, temp, dataDir });
  } finally {
    await harness?.dispose();
    rmSync(temp, { recursive: true, force: true });
  }
}

interface RerunInput {
  readonly recording: Recording;
  readonly path: string;
  readonly faults: readonly Fault[];
  readonly options: RunCassetteOptions;
  readonly temp: string;
  readonly dataDir: string;
}

/** One recorded session during the re-run: its calls, results and decisions, and what the re-run produced for it. */
interface Node {
  readonly recording: Recording;
  /** `''` for the recording itself, `subagent <id>: ` for a child (divergences name the session). */
  readonly label: string;
  readonly calls: readonly RecordedCall[];
  cursor: number;
  readonly results: Map<string, SessionEvent<'tool/result'>['data']>;
  readonly decisions: Map<string, SessionEvent<'approval/decided'>['data']>;
  readonly produced: AnySessionEvent[];
  /** The session's requests hashed in O(new messages) each (a long session's history is not hashed again per call). */
  readonly hasher: RequestHasher;
}

// Keyed by turn and call id: a model may reuse call ids from turn to turn.
const key = (turn: number, callId: string) => `${turn}\u0000${callId}`;

function nodeFor(recording: Recording, label: string): Node {
  const results = new Map<string, SessionEvent<'tool/result'>['data']>();
  const decisions = new Map<string, SessionEvent<'approval/decided'>['data']>();
  for (const event of recording.events) {
    if (event.type === 'tool/result') results.set(key(event.data.turn, event.data.callId), event.data);
    else if (event.type === 'approval/decided') decisions.set(key(event.data.turn, event.data.callId), event.data);
  }
  return { recording, label, calls: recordedCalls(recording.events), cursor: 0, results, decisions, produced: [], hasher: new RequestHasher() };
}

/** Every recording of the tree, the root first. */
function allRecordings(root: Recording): Recording[] {
  return [root, ...[...root.children.values()].flatMap(allRecordings)];
}

async function rerun(harness: Harness, input: RerunInput): Promise<CassetteReport> {
  const { recording, faults, options } = input;
  const { header, events, imported } = recording;
  const root = nodeFor(recording, '');
  const calls = root.calls;
  const plans = planTurns(events, calls, imported);
  const divergences: string[] = [];
  const notes: string[] = [];
  const where = (call: RecordedCall, node: Node = root) => `${node.label}call ${call.index + 1} (turn ${call.turn} step ${call.step}${call.attempt > 0 ? ` attempt ${call.attempt + 1}` : ''})`;
  const recordings = allRecordings(recording);
  const everyCall = recordings.flatMap((r) => (r === recording ? calls : recordedCalls(r.events)));

  // Routes the recording used that the config does not have: a stand-in route (the model is replaced anyway).
  const providers = new Set<string>();
  for (const call of everyCall) {
    const provider = call.snapshot?.ok ? call.snapshot.config.provider : call.header?.config.provider;
    if (typeof provider === 'string') providers.add(provider);
  }
  const missing = [...providers].filter((provider) => !harness.ctx.llm.hasRoute(provider));
  if (missing.length > 0) {
    harness.ctx.llm.registerAdapter(missing, new StandInRoute());
    notes.push(`provider${missing.length > 1 ? 's' : ''} ${missing.join(', ')} ha${missing.length > 1 ? 've' : 's'} no route in the config: served on a stand-in route (any model)`);
  }
  // Imported sessions do not know the tool set ({{tools}}): recorded tool names the config lacks get stubs.
  const stubbed = imported
    ? registerStubTools(
        harness,
        recordings.flatMap((r) => r.events),
      )
    : [];
  if (stubbed.length > 0) notes.push(`imported session: recorded tools ${stubbed.join(', ')} are stubs (their results are the recorded ones)`);
  const childCount = recordings.length - 1;
  if (childCount > 0) notes.push(`${childCount} subagent session${childCount === 1 ? '' : 's'} re-run with ${childCount === 1 ? 'its' : 'their'} recorded calls`);

  // ── Sessions: the re-run's session ids mapped to their recorded counterparts ──
  const id = rerunId(header.id, options.update?.dataDir);
  const nodes = new Map<string, Node>([[id, root]]);
  /** The node of a re-run session: a child is found by its header's link (parent session and call). */
  const nodeOf = async (sessionId: string | undefined): Promise<Node | undefined> => {
    if (sessionId === undefined) return root;
    const known = nodes.get(sessionId);
    if (known !== undefined) return known;
    const link = (await rerunHeader(harness, sessionId))?.parentSession;
    if (link?.callId === undefined) return undefined;
    const parent = await nodeOf(link.sessionId);
    const child = parent?.recording.children.get(link.callId);
    if (child === undefined) return undefined;
    const node = nodeFor(child, `subagent ${child.header.id}: `);
    nodes.set(sessionId, node);
    return node;
  };

  // ── The model: every dispatch served from the recording of its session, in order ──
  let served = 0;
  let compared = 0;
  let comparedOnHeader = 0;
  const divergedCalls = new Set<RecordedCall>();
  const fired = new Set<Fault>();
  const injected: { call: number; fault: string; where: string }[] = [];
  const summaries = events.filter((e): e is SessionEvent<'compaction/summary'> => e.type === 'compaction/summary');
  let summaryCursor = 0;
  let plan: TurnPlan | undefined;
  let abortRun: (() => void) | undefined;
  let requestCount = 0;
  async function* serve(request: GenerateOptions): AsyncGenerator<StreamChunk> {
    const node = await nodeOf(request.sessionId);
    if (node === undefined) {
      const text = `a model call of session ${request.sessionId} has no recorded session (a subagent the recording does not have)`;
      divergences.push(text);
      throw new LlmError('CASSETTE_MISMATCH', `Cassette: ${text}.`);
    }
    const number = ++requestCount;
    const call = node.calls[node.cursor];
    const cutTurn = node === root && (plan?.reason === 'aborted' || plan?.reason === 'interrupted');
    if (call === undefined || (call.turn !== plan?.turn && cutTurn)) {
      // A cut-short turn stops before a call the recording does not have.
      if (cutTurn) {
        abortRun?.();
        throw new LlmError('ABORTED', 'The recording was cut here.');
      }
      const text = `${node.label}request ${number} (turn ${node === root ? (plan?.turn ?? '?') : '?'}): the recording has no model call left for it (${node.calls.length} recorded, all served)`;
      divergences.push(text);
      throw new LlmError('CASSETTE_MISMATCH', `Cassette mismatch: ${text}.`);
    }
    // An injected fault fails the call's first request; the call stays for the retry. Faults name the recording's own calls.
    const fault = node === root ? faults.find((f) => f.call === call.index + 1 && !fired.has(f)) : undefined;
    if (fault !== undefined) {
      fired.add(fault);
      injected.push({ call: fault.call, fault: describeFault(fault), where: where(call) });
      yield* faultStream(call, fault, request.signal);
      return;
    }
    node.cursor++;
    served++;
    const difference = compareRequest(call, request, node.hasher);
    if (difference.kind === 'full') compared++;
    else comparedOnHeader++;
    if (difference.text !== undefined) {
      divergedCalls.add(call);
      divergences.push(`${where(call, node)}: ${difference.text}`);
    }
    yield* replayStream(call, request.signal);
  }
  const undo = harness.llm.replaceModel({
    stream(request: GenerateOptions): AsyncIterable<StreamChunk> {
      if (request.purpose !== undefined && request.purpose !== 'agent') {
        if (request.purpose === 'compaction' && summaryCursor < summaries.length) return summaryStream(summaries[summaryCursor++]!);
        const text = `a ${request.purpose} call (${request.provider}/${request.model}) has no recording`;
        divergences.push(`turn ${plan?.turn ?? '?'}: ${text}`);
        throw new LlmError('CASSETTE_MISMATCH', `Cassette: ${text}.`);
      }
      return serve(request);
    },
  });
  const legacy = calls.filter((call) => call.snapshot === undefined).length;
  if (legacy > 0)
    notes.push(
      `${legacy === calls.length ? 'this journal predates' : `${legacy} of ${calls.length} calls predate`} request snapshots: ${legacy === calls.length ? 'its requests are' : 'those are'} compared on the request header (config, system, tools) and the message count only`,
    );

  // ── Approvals: the current policy; a person's recorded answers answer its questions ──
  // The approvals plugin's service, by shape (a plugin does not import another).
  const approvals = (harness.ctx as unknown as { approvals?: ApprovalPolicies }).approvals;
  const nodeOfRequest = (request: ApprovalRequest): Node => nodes.get(request.sessionId) ?? root;
  const ask = (request: ApprovalRequest) => {
    const recorded = nodeOfRequest(request).decisions.get(key(request.turn, request.callId));
    if (recorded === undefined || recorded.decidedBy !== 'user')
      return { allow: false, reason: recorded === undefined ? 'the recording has no answer to this question' : `the recording has no person's answer (${recorded.decidedBy} decided)` };
    return recorded.decision === 'allow' ? { allow: true } : { allow: false, reason: recorded.reason ?? 'the user said no' };
  };
  const policy = approvals?.create(options.approve ?? approvals.defaultPolicy, { ask });
  notes.push(approvals ? `approvals decided by policy ${options.approve ?? approvals.defaultPolicy}` : 'no approvals plugin in the config: the recorded decisions are repeated');
  const approve = async (request: ApprovalRequest): Promise<ApprovalAnswer> => {
    const node = nodeOfRequest(request);
    if (node === root && plan?.cut?.at === 'approval' && plan.cut.callId === request.callId) abortRun?.();
    const recorded = node.decisions.get(key(request.turn, request.callId));
    let answer: { decision: 'allow' | 'deny'; decidedBy?: string; reason?: string };
    if (policy !== undefined) {
      const given = await policy(request);
      answer = typeof given === 'string' ? { decision: given } : given;
    } else if (recorded !== undefined) answer = { decision: recorded.decision, decidedBy: recorded.decidedBy, ...(recorded.reason ? { reason: recorded.reason } : {}) };
    else answer = { decision: node.results.get(key(request.turn, request.callId))?.code === 'DENIED' ? 'deny' : 'allow', decidedBy: 'cassette' };
    if (recorded !== undefined && recorded.decision !== answer.decision) {
      divergences.push(
        `${node.label}turn ${request.turn} step ${request.step}: approval of ${request.name} (${request.callId}): recorded ${recorded.decision} (${recorded.decidedBy}), now ${answer.decision} (${answer.decidedBy ?? 'approver'}${answer.reason ? `: ${answer.reason}` : ''})`,
      );
    }
    return answer as ApprovalAnswer;
  };

  // ── Tools: recorded results, or re-run in a scratch copy; a call that spawned a subagent re-runs it ──
  let toolsServed = 0;
  let toolsRerun = 0;
  let cwd: string;
  const stubs = new Set(stubbed);
  const rerunChildren = new Set<Recording>();
  /** A stub tool's recorded subagent: the cassette runs the child's recorded turns itself. */
  const driveChild = async (parent: { id: string; header: SessionHeader }, callId: string, child: Recording, signal: AbortSignal): Promise<void> => {
    const session = await harness.createSession({
      cwd,
      parentSession: { sessionId: parent.id, callId, depth: (parent.header.parentSession?.depth ?? 0) + 1 },
      newId: () => `m${++counter}`,
      now: () => clock++,
    });
    try {
      const node = (await nodeOf(session.id))!;
      for (const turnPlan of planTurns(child.events, node.calls, child.imported)) {
        const config = turnPlan.config;
        const inherited = (request: ApprovalRequest) => approve({ ...request, origin: [session.id, ...(request.origin ?? [])] });
        for await (const event of session.run(turnPlan.input, { approve: inherited, signal, ...(config ? { provider: config.provider, model: config.model } : {}) })) node.produced.push(event);
      }
    } finally {
      await session.close();
    }
  };
  const served_ = async (
    payload: { session: { id: string; header: SessionHeader }; callId: string; turn: number; step: number; tool: { name: string }; signal: AbortSignal },
    next: (p: unknown) => Promise<unknown>,
  ) => {
    const node = (await nodeOf(payload.session.id)) ?? root;
    const child = node.recording.children.get(payload.callId);
    if (child !== undefined) {
      rerunChildren.add(child);
      // The real spawning tool runs (its child's calls are served from the recording); a stub's child is run here.
      if (!stubs.has(payload.tool.name)) return next(payload);
      await driveChild(payload.session, payload.callId, child, payload.signal);
    }
    const recorded = node.results.get(key(payload.turn, payload.callId));
    if (recorded === undefined) {
      divergences.push(`${node.label}turn ${payload.turn} step ${payload.step}: tool call ${payload.callId} (${payload.tool.name}) has no recorded result`);
      return { content: [{ type: 'text', text: 'The recording has no result for this call.' }], isError: true, code: 'NOT_RECORDED', durationMs: 0 };
    }
    toolsServed++;
    // The call that was running when the turn was cut: the turn stops here.
    if (node === root && plan?.cut?.at === 'execute' && plan.cut.callId === payload.callId) abortRun?.();
    const block = recorded.message.content.find((b) => b.type === 'tool-result');
    return {
      content: block && block.type === 'tool-result' ? block.content : [],
      isError: block && block.type === 'tool-result' ? block.isError : true,
      ...(recorded.code ? { code: recorded.code } : {}),
      durationMs: recorded.durationMs ?? 0,
    };
  };
  if (options.runTools !== undefined) {
    cwd = join(input.temp, 'workspace');
    cpSync(options.runTools, cwd, { recursive: true });
    notes.push(`tools re-run in a scratch copy of ${options.runTools}`);
    harness.kernel.bus.add(
      'tools/execute',
      async (payload: unknown, next: (p: unknown) => Promise<unknown>) => {
        toolsRerun++;
        return next(payload);
      },
      { stage: Number.MAX_SAFE_INTEGER, owner: 'cassette' },
    );
  } else {
    cwd = header.cwd !== undefined && existsSync(header.cwd) && statSync(header.cwd).isDirectory() ? header.cwd : join(input.temp, 'workspace');
    mkdirSync(cwd, { recursive: true });
    // Innermost: the user's tools/execute middleware still runs; the tool body does not.
    harness.kernel.bus.add('tools/execute', served_ as never, { stage: Number.MAX_SAFE_INTEGER, owner: 'cassette' });
  }

  // ── The turns ──
  let counter = 0;
  let clock = header.createdAtMs;
  const session = await harness.createSession({ cwd, id, parent: { sessionId: header.id, seq: 0 }, newId: () => `m${++counter}`, now: () => clock++ });
  const produced = root.produced;
  const turns: { turn: number; reason?: string; recorded?: string; same: boolean; calls: number }[] = [];
  // Counted once: a filter of every call per turn would make a long recording's re-run quadratic.
  const callsPerTurn = new Map<number, number>();
  for (const call of calls) callsPerTurn.set(call.turn, (callsPerTurn.get(call.turn) ?? 0) + 1);
  try {
    for (const turnPlan of plans) {
      plan = turnPlan;
      for (const event of turnPlan.before) produced.push((await session.session.append(event.type as never, event.data as never)) as AnySessionEvent);
      const controller = new AbortController();
      abortRun = () => controller.abort(new LlmError('ABORTED', 'The recording was cut here.'));
      let reason: string | undefined;
      const config = turnPlan.config;
      for await (const event of session.run(turnPlan.input, {
        approve,
        signal: controller.signal,
        ...(config ? { provider: config.provider, model: config.model, ...(config.reasoningEffort ? { reasoningEffort: config.reasoningEffort } : {}) } : {}),
      })) {
        if (event.origin !== undefined) {
          // A subagent's event: it belongs to the session of its last hop.
          nodes.get(event.origin.at(-1)!)?.produced.push(event);
          continue;
        }
        produced.push(event);
        if (event.type === 'turn/end') reason = event.data.reason;
      }
      const same = sameEnd(turnPlan.reason, reason);
      turns.push({
        turn: turnPlan.turn,
        ...(reason ? { reason } : {}),
        ...(turnPlan.reason ? { recorded: turnPlan.reason } : {}),
        same,
        calls: callsPerTurn.get(turnPlan.turn) ?? 0,
      });
      if (!same) divergences.push(`turn ${turnPlan.turn} ended ${reason ?? '(no turn/end)'}; the recording says ${turnPlan.reason ?? '(no turn/end)'}`);
    }
  } finally {
    await session.close();
    undo();
  }

  const left = calls.slice(root.cursor);
  if (left.length > 0) divergences.push(`${left.length} recorded model call(s) never requested: ${left.map((call) => where(call)).join(', ')}`);
  if (summaryCursor < summaries.length)
    divergences.push(`${summaries.length - summaryCursor} recorded compaction summar${summaries.length - summaryCursor === 1 ? 'y was' : 'ies were'} never requested`);
  for (const fault of faults)
    if (!fired.has(fault))
      divergences.push(
        `fault on call ${fault.call} (${describeFault(fault)}) was never injected: ${fault.call > calls.length ? `the recording has ${calls.length} calls` : 'the call was not requested'}`,
      );
  divergences.push(...compareMessages(events, produced), ...compareToolResults(events, produced));
  // Each subagent: its calls all served, its messages, results and turn ends as recorded.
  for (const node of nodes.values()) {
    if (node === root) continue;
    const rest = node.calls.slice(node.cursor);
    if (rest.length > 0) divergences.push(`${node.label}${rest.length} recorded model call(s) never requested: ${rest.map((call) => where(call, node)).join(', ')}`);
    divergences.push(...compareMessages(node.recording.events, node.produced).map((d) => node.label + d), ...compareToolResults(node.recording.events, node.produced).map((d) => node.label + d));
    const ends = (list: readonly AnySessionEvent[]) => list.filter((e) => e.type === 'turn/end').map((e) => (e as SessionEvent<'turn/end'>).data.reason);
    const recordedEnds = ends(node.recording.events);
    const rerunEnds = ends(node.produced);
    if (recordedEnds.length !== rerunEnds.length || recordedEnds.some((reason, i) => !sameEnd(reason, rerunEnds[i])))
      divergences.push(`${node.label}turns ended ${rerunEnds.join(', ') || '(none)'}; the recording says ${recordedEnds.join(', ') || '(none)'}`);
  }
  for (const child of recordings.slice(1)) if (!rerunChildren.has(child)) divergences.push(`the recorded subagent ${child.header.id} was never re-run (no call spawned it)`);

  let fork: CassetteReport['fork'];
  const rerunJournal = { id: session.id, path: session.path };
  if (divergences.length > 0 && options.update !== undefined) {
    const target = join(options.update.dataDir, 'sessions', `${session.id}.jsonl`);
    mkdirSync(join(options.update.dataDir, 'sessions'), { recursive: true });
    if (target !== session.path) copyFileSync(session.path, target);
    fork = { id: session.id, path: target };
  }
  return {
    same: divergences.length === 0,
    recording: { id: header.id, path: input.path, imported },
    calls: { recorded: everyCall.length, served, compared, comparedOnHeader, diverged: divergedCalls.size, injected: injected.length },
    compactions: { recorded: summaries.length, served: summaryCursor },
    toolResults: { recorded: recordings.reduce((n, r) => n + r.events.filter((event) => event.type === 'tool/result').length, 0), served: toolsServed, rerun: toolsRerun },
    subagents: { recorded: childCount, rerun: nodes.size - 1 },
    turns,
    faults: injected,
    divergences,
    notes,
    rerun: rerunJournal,
    ...(fork ? { fork } : {}),
  };
}

/** A re-run session's header, from the harness's store. */
async function rerunHeader(harness: Harness, sessionId: string): Promise<SessionHeader | undefined> {
  try {
    for await (const lines of harness.store.read(sessionId, { toSeq: 0 })) {
      const first = lines[0];
      if (first !== undefined) return JSON.parse(first.text) as SessionHeader;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/** The re-run's session id: `<recorded>.cassette`, or the first free `<recorded>.update-N` in the update's data directory. */
function rerunId(recorded: string, updateDir: string | undefined): string {
  const base = recorded.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 180) || 'session';
  if (updateDir === undefined) return `${base}.cassette`;
  for (let n = 1; ; n++) {
    const id = `${base}.update-${n}`;
    if (!existsSync(join(updateDir, 'sessions', `${id}.jsonl`))) return id;
  }
}

/** A recorded `interrupted` turn (the journal's repair after a crash) matches a re-run stopped where the recording was cut. */
function sameEnd(recorded: string | undefined, rerun: string | undefined): boolean {
  return recorded === rerun || (recorded === 'interrupted' && rerun === 'aborted');
}

/** How a request compares with its recorded call: on the whole canonical request, or on the header. */
function compareRequest(call: RecordedCall, request: GenerateOptions, hasher: RequestHasher): { kind: 'full' | 'header'; text?: string } {
  const recorded = call.snapshot;
  if (recorded?.ok) {
    if (hasher.hash(request) === recorded.hash) return { kind: 'full' };
    // Rebuilt only on a difference (O(its messages)).
    const found = firstDifference(recorded.request().request, canonicalRequest(request), matchesRecorded);
    if (found === undefined) return { kind: 'full' };
    return { kind: 'full', text: `${found.path || '(request)'}: ${showDifference(found)}` };
  }
  const header = call.header;
  const actual = canonicalRequest(request);
  const problem = recorded !== undefined && !recorded.ok ? ` (its snapshot could not be rebuilt: ${recorded.problem})` : '';
  if (header === undefined) return { kind: 'header', ...(problem ? { text: `no request header recorded${problem}` } : {}) };
  const { adapterKind: _kind, ...rest } = header as typeof header & { adapterKind?: string };
  const found =
    firstDifference({ config: rest.config, system: rest.system, tools: rest.tools }, { config: actual.config, system: actual.system, tools: actual.tools }, matchesRecorded) ??
    (call.messageCount === actual.messages.length ? undefined : { path: 'messages.length', recorded: call.messageCount, actual: actual.messages.length });
  if (found === undefined) return { kind: 'header', ...(problem ? { text: problem.trim() } : {}) };
  return { kind: 'header', text: `${found.path || '(request)'}: ${showDifference(found)}${problem}` };
}

/** A recorded call's exact chunks; a cut call (no finish) ends as aborted. */
async function* replayStream(call: RecordedCall, signal: AbortSignal | undefined): AsyncGenerator<StreamChunk> {
  for (const chunk of call.chunks) {
    if (signal?.aborted) throw signal.reason ?? new LlmError('ABORTED', 'The replay was aborted.');
    yield chunk;
  }
  if (call.finish === undefined) throw new LlmError('ABORTED', `The recording cut call ${call.index + 1} here (no finish chunk was recorded).`);
}

/** The first chunks of a call, then the injected fault. */
async function* faultStream(call: RecordedCall, fault: Fault, signal: AbortSignal | undefined): AsyncGenerator<StreamChunk> {
  const count = Math.min(chunksBefore(fault), call.chunks.filter((chunk) => chunk.type !== 'finish').length);
  for (const chunk of call.chunks.slice(0, count)) {
    if (signal?.aborted) throw signal.reason ?? new LlmError('ABORTED', 'The replay was aborted.');
    yield chunk;
  }
  throw faultError(fault);
}

/** A recorded compaction summary as a text reply. */
async function* summaryStream(summary: SessionEvent<'compaction/summary'>): AsyncGenerator<StreamChunk> {
  const text = summary.data.summary;
  yield { type: 'block-start', index: 0, blockType: 'text' };
  yield { type: 'text-delta', index: 0, text };
  yield { type: 'block-end', index: 0, block: { type: 'text', text } };
  if (summary.data.usage) yield { type: 'usage', usage: summary.data.usage };
  yield { type: 'finish', finish: { kind: 'stop' } };
}

/** A route for a recorded provider the config does not have; the stand-in serves its streams. */
class StandInRoute extends LlmAdapter {
  stream(): AsyncIterable<StreamChunk> {
    throw new LlmError('NO_ADAPTER', 'This route only exists for a cassette re-run.');
  }
  providerInfo(provider: string) {
    return { provider, kind: 'cassette', label: 'cassette stand-in route' };
  }
}

/**
 * Splits the recording into turns: their input (the prompts the turn started with — for an imported
 * session everything that entered before its first call), what entered between turns, how each
 * ended, and where a cut-short turn stops.
 */
function planTurns(events: readonly AnySessionEvent[], calls: readonly RecordedCall[], imported: boolean): TurnPlan[] {
  const firstSeqs = new Set(calls.map((call) => call.firstSeq));
  const callAt = new Map(calls.map((call) => [call.firstSeq, call]));
  const plans: TurnPlan[] = [];
  let before: TurnPlan['before'] = [];
  let current: { plan: TurnPlan; inputOpen: boolean; lastChunkSeq: number; decisions: { seq: number; at: 'execute' | 'approval'; callId: string }[] } | undefined;
  for (const event of events) {
    if (event.type === 'turn/start') {
      current = { plan: { turn: event.data.turn, input: [], before }, inputOpen: true, lastChunkSeq: 0, decisions: [] };
      before = [];
      plans.push(current.plan);
      continue;
    }
    if (current === undefined) {
      if (BETWEEN_TURNS.has(event.type)) before.push({ type: event.type, data: event.data });
      continue;
    }
    if (event.type === 'user/message' && current.inputOpen) {
      current.plan.input.push(event.data.message);
      continue;
    }
    // Our loop journals a turn's prompts before its first step; another runtime's may not.
    if ((event.type === 'step/start' && !imported) || (event.type === 'assistant/chunk' && firstSeqs.has(event.seq))) current.inputOpen = false;
    if (event.type === 'assistant/chunk') {
      current.lastChunkSeq = event.seq;
      const call = callAt.get(event.seq);
      if (call !== undefined && current.plan.config === undefined) {
        const config = call.snapshot?.ok ? call.snapshot.config : call.header?.config;
        if (config !== undefined) current.plan.config = { provider: config.provider, model: config.model, ...(config.reasoningEffort ? { reasoningEffort: config.reasoningEffort } : {}) };
      }
    } else if (event.type === 'approval/decided') current.decisions.push({ seq: event.seq, at: 'approval', callId: event.data.callId });
    else if (event.type === 'tool/start') current.decisions.push({ seq: event.seq, at: 'execute', callId: event.data.callId });
    else if (event.type === 'turn/end') {
      current.plan.reason = event.data.reason;
      if (event.data.reason === 'aborted' || event.data.reason === 'interrupted') {
        // The last thing outside the model after the last recorded chunk is where the turn was cut.
        const last = current.decisions.filter((d) => d.seq > current!.lastChunkSeq).at(-1);
        if (last !== undefined) current.plan.cut = { at: last.at, callId: last.callId };
      }
      current = undefined;
    }
  }
  return plans;
}

/** Stubs for the recorded tool names the config does not have (imported sessions: `{{tools}}`). */
function registerStubTools(harness: Harness, events: readonly AnySessionEvent[]): string[] {
  const specs = new Map<string, ToolSpec>();
  for (const event of events) {
    if (event.type === 'request/header' && Array.isArray(event.data.header.tools)) for (const tool of event.data.header.tools) if (!specs.has(tool.name)) specs.set(tool.name, tool);
    if (event.type === 'tool/call' && !specs.has(event.data.name)) specs.set(event.data.name, { name: event.data.name, description: '', inputSchema: { type: 'object' } });
  }
  const out: string[] = [];
  for (const spec of specs.values()) {
    if (harness.tools.get(spec.name) !== undefined || !/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name)) continue;
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
    out.push(spec.name);
  }
  return out;
}

function compareMessages(recorded: readonly AnySessionEvent[], produced: readonly AnySessionEvent[]): string[] {
  const a = recorded.filter((e): e is SessionEvent<'assistant/message'> => e.type === 'assistant/message');
  const b = produced.filter((e): e is SessionEvent<'assistant/message'> => e.type === 'assistant/message');
  const out: string[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const r = a[i];
    const p = b[i];
    if (r === undefined) {
      out.push(`an extra assistant message (turn ${p!.data.turn} step ${p!.data.step}): ${showValue(messageText(p!.data.message), 80)}`);
      continue;
    }
    if (p === undefined) {
      out.push(`the recorded assistant message of turn ${r.data.turn} step ${r.data.step} (seq ${r.seq}) was not produced`);
      continue;
    }
    const at = `assistant message ${i + 1} (turn ${r.data.turn} step ${r.data.step})`;
    const found = firstDifference(r.data.message.content, p.data.message.content);
    if (found !== undefined) out.push(`${at}: content${found.path}: ${showDifference(found)}`);
    else if (r.data.finish.kind !== p.data.finish.kind || Boolean(r.data.interrupted) !== Boolean(p.data.interrupted)) {
      out.push(`${at}: recorded finish ${r.data.finish.kind}${r.data.interrupted ? ' (interrupted)' : ''}, re-run ${p.data.finish.kind}${p.data.interrupted ? ' (interrupted)' : ''}`);
    }
  }
  return out;
}

function compareToolResults(recorded: readonly AnySessionEvent[], produced: readonly AnySessionEvent[]): string[] {
  const results = (events: readonly AnySessionEvent[]) =>
    new Map(events.filter((e): e is SessionEvent<'tool/result'> => e.type === 'tool/result').map((e) => [`${e.data.turn}\u0000${e.data.callId}`, e]));
  const a = results(recorded);
  const b = results(produced);
  const out: string[] = [];
  for (const [key, r] of a) {
    const callId = r.data.callId;
    const p = b.get(key);
    if (p === undefined) out.push(`the recorded tool result for ${callId} (seq ${r.seq}) was not produced`);
    else if (!isDeepStrictEqual(r.data.message.content, p.data.message.content)) {
      const found = firstDifference(r.data.message.content, p.data.message.content);
      out.push(`tool result for ${callId} (turn ${r.data.turn} step ${r.data.step}): content${found?.path ?? ''}: ${found ? showDifference(found, 100) : '(equal?)'}`);
    }
  }
  for (const [key, p] of b) if (!a.has(key)) out.push(`an extra tool result for ${p.data.callId} (turn ${p.data.turn} step ${p.data.step})`);
  return out;
}

/**
 * The report as text (the CLI prints it; `expectCassette` throws it). `c` colours it; `show` makes
 * recorded text safe to print (a terminal's control characters escaped).
 */
export function formatCassetteReport(
  report: CassetteReport,
  c: { green(s: string): string; red(s: string): string; dim(s: string): string; bold(s: string): string } = PLAIN,
  show: (text: string) => string = (text) => text,
): string {
  const lines: string[] = [];
  const { calls, toolResults } = report;
  lines.push(`${c.bold('cassette')} ${show(report.recording.id)} ${c.dim(`(${show(basename(report.recording.path))}${report.recording.imported ? ', imported' : ''})`)}`);
  for (const note of report.notes) lines.push(c.dim(`  note: ${show(note)}`));
  for (const turn of report.turns) {
    const note = !turn.same
      ? c.red(` (recorded: ${turn.recorded ?? 'no turn/end'})`)
      : turn.recorded !== turn.reason
        ? c.dim(` (recorded: ${turn.recorded} — stopped where the recording was cut)`)
        : '';
    lines.push(`  ${turn.same ? c.green('✓') : c.red('✗')} turn ${turn.turn} ${show(turn.reason ?? 'did not end')}${note} ${c.dim(`· ${turn.calls} model call${turn.calls === 1 ? '' : 's'}`)}`);
  }
  for (const fault of report.faults) lines.push(`  ${c.dim('injected')} ${fault.fault} on ${fault.where}`);
  const compactions = report.compactions.recorded ? `, ${report.compactions.served}/${report.compactions.recorded} compaction summaries` : '';
  lines.push(
    c.dim(
      `  calls: ${calls.recorded} recorded, ${calls.served} served, ${calls.compared} compared on the whole request${calls.comparedOnHeader ? `, ${calls.comparedOnHeader} on the header only` : ''}, ${calls.diverged} diverged, ${calls.injected} injected${compactions}; tool results: ${toolResults.served} served, ${toolResults.rerun} re-run (${toolResults.recorded} recorded)${report.subagents.recorded ? `; subagents: ${report.subagents.rerun} of ${report.subagents.recorded} re-run` : ''}`,
    ),
  );
  if (report.same) lines.push(`${c.green('same')} ${c.dim('every request, reply, tool result, approval and turn end matches the recording')}`);
  else {
    lines.push(c.red(`diverged (${report.divergences.length})`));
    for (const divergence of report.divergences) lines.push(`  ${c.red('✗')} ${show(divergence).split('\n').join('\n    ')}`);
  }
  if (report.fork)
    lines.push(`${c.bold('updated')}: the re-run was written as ${show(report.fork.id)} ${c.dim(`(${show(report.fork.path)}; a fork of ${show(report.recording.id)}, which is unchanged)`)}`);
  return lines.join('\n');
}

const PLAIN = { green: (s: string) => s, red: (s: string) => s, dim: (s: string) => s, bold: (s: string) => s };
