/**
 * llm-replay — a journal as a test cassette (DESIGN "Replay": cassette).
 *
 * A cassette holds the model calls a journal recorded (`recordedCalls`: each run of
 * `assistant/chunk` records of one (turn, step) between `step/start` / `llm/retry` / a finish /
 * an `assistant/message` is one call) and serves them, in order, through `llm/stream`: the adapter
 * this plugin registers yields each call's exact recorded chunks — the same frozen objects, the
 * finish chunk with its full replay envelope.
 *
 * Which call a request gets: when the request names a `sessionId` whose live journal is delivering
 * `session/event` on this harness, the next unused call recorded at that session's current
 * (turn, step) (retries and recoveries take the next one); otherwise the next unused call in
 * recording order.
 *
 * A request that differs from the recording — provider, model, tool names, message count — fails
 * loudly: the adapter throws `CASSETTE_MISMATCH` with a readable diff (the seam turns it into a
 * terminal `finish{error}` whose failure carries the diff), and the mismatch stays listed on the
 * cassette. A recorded `{{…}}` placeholder (DeepSeek Harness sessions record `{{tools}}`,
 * `{{system}}`, `{{cwd}}`, `{{sessionId}}`) matches anything. `assertConsumed()` throws
 * `CASSETTE_UNCONSUMED` listing the calls never served. A call the recording cut (no finish chunk,
 * e.g. a cancelled stream) replays its chunks, then ends as `aborted`.
 *
 * Config: `{ journal?: path, cassette?: Cassette, provider?: string | string[] (routes to register,
 * default 'replay'), strict?: boolean (default true) }`. `journal` is a Harness journal or a
 * DeepSeek Harness session (imported on the fly). A route that is not a recorded provider is an
 * alias: requests on it are not compared on provider. With `strict: false`, mismatches are
 * reported on `kernel/diagnostic` and the call is served anyway. The cassette is provided as the
 * `cassette` service (`ctx.cassette`).
 */
import { matchesRecorded } from './match.ts';
import {
  canonicalRequest,
  definePlugin,
  firstDifference,
  RequestHasher,
  showDifference,
  HarnessError,
  importDshSession,
  LlmAdapter,
  LlmError,
  readJournal,
  readJournalHeader,
  recordedCalls,
  z,
  type AnySessionEvent,
  type GenerateOptions,
  type RecordedCall,
  type StreamChunk,
} from '../../runtime/index.ts';

declare global {
  namespace Harness {
    interface Services {
      /** The loaded cassette (plugin `llm-replay`). */
      cassette?: Cassette;
    }
  }
}

export interface CassetteOptions {
  /** Fail a mismatching request (default true); false serves it and only records the mismatch. */
  readonly strict?: boolean;
  /** Routes that stand in for every recorded provider (provider is not compared on them). */
  readonly aliasProviders?: readonly string[];
  /** Told about each mismatch (also when not strict). */
  readonly onMismatch?: (diff: string) => void;
}

export { matchesRecorded } from './match.ts';
export { runCassette, formatCassetteReport, type RunCassetteOptions, type CassetteReport } from './rerun.ts';
export { parseFault, describeFault, type Fault } from './faults.ts';

function describeCall(call: RecordedCall): string {
  const ends = call.finish === undefined ? 'cut (no finish)' : `finish ${call.finish.kind}`;
  return `call ${call.index + 1} (turn ${call.turn}, step ${call.step}${call.attempt > 0 ? `, attempt ${call.attempt + 1}` : ''}; seq ${call.firstSeq}-${call.lastSeq}: ${call.chunks.length} chunks, ${ends})`;
}

/** The recorded model calls of a journal, served in order. */
export class Cassette {
  readonly calls: readonly RecordedCall[];
  /** Every mismatch seen, as the diff text of its error. */
  readonly mismatches: string[] = [];
  private readonly used: boolean[];
  /** Unused call indices per (turn, step), in order: a request at a known position is O(1). */
  private readonly byStep = new Map<string, number[]>();
  /** Every call before it is used (the next call in recording order). */
  private cursor = 0;
  private readonly strict: boolean;
  private readonly aliases: Set<string>;
  private readonly onMismatch: ((diff: string) => void) | undefined;
  private requests = 0;
  /** Per requesting session: its requests hashed in O(new messages) (see RequestHasher). */
  private readonly hashers = new Map<string | undefined, RequestHasher>();

  constructor(events: Iterable<AnySessionEvent>, options: CassetteOptions = {}) {
    this.calls = recordedCalls(events);
    this.used = this.calls.map(() => false);
    this.index();
    this.strict = options.strict !== false;
    this.aliases = new Set(options.aliasProviders ?? []);
    this.onMismatch = options.onMismatch;
  }

  /** Adds alias routes (the plugin registers them). */
  addAliases(providers: Iterable<string>): void {
    for (const provider of providers) this.aliases.add(provider);
  }

  /** Distinct providers of the recorded request headers. */
  get providers(): string[] {
    const out = new Set<string>();
    for (const call of this.calls) if (typeof call.header?.config?.provider === 'string') out.add(call.header.config.provider);
    return [...out];
  }

  /** The calls not served yet, in order. */
  unconsumed(): RecordedCall[] {
    return this.calls.filter((_, i) => !this.used[i]);
  }

  /** @throws HarnessError `CASSETTE_UNCONSUMED` listing every call not served (and any mismatch). */
  assertConsumed(): void {
    const left = this.unconsumed();
    if (left.length === 0 && this.mismatches.length === 0) return;
    const lines = left.map((call) => `  - ${describeCall(call)}`);
    const mismatches = this.mismatches.length
      ? `\n${this.mismatches.length} request(s) did not match the recording:\n${this.mismatches.map((m) => `  - ${m.split('\n').join('\n    ')}`).join('\n')}`
      : '';
    throw new HarnessError('CASSETTE_UNCONSUMED', `${left.length} of ${this.calls.length} recorded model call(s) were never requested:\n${lines.join('\n')}${mismatches}`, {
      details: { unconsumed: left.map((call) => ({ index: call.index, turn: call.turn, step: call.step, attempt: call.attempt })), mismatchCount: this.mismatches.length },
    });
  }

  /** Marks every call unused again and forgets mismatches. */
  reset(): void {
    this.used.fill(false);
    this.mismatches.length = 0;
    this.requests = 0;
    this.hashers.clear();
    this.index();
  }

  private index(): void {
    this.byStep.clear();
    this.cursor = 0;
    for (const call of this.calls) {
      const key = `${call.turn}:${call.step}`;
      const list = this.byStep.get(key);
      if (list === undefined) this.byStep.set(key, [call.index]);
      else list.push(call.index);
    }
  }

  /** The next unused call at (turn, step), or in recording order; -1 when none is left. */
  private nextIndex(position: { turn: number; step: number } | undefined): number {
    if (position === undefined) {
      while (this.cursor < this.calls.length && this.used[this.cursor]) this.cursor++;
      return this.cursor < this.calls.length ? this.cursor : -1;
    }
    const list = this.byStep.get(`${position.turn}:${position.step}`);
    while (list !== undefined && list.length > 0 && this.used[list[0]!]) list.shift();
    return list?.[0] ?? -1;
  }

  /**
   * Picks the call for a request and checks it against the recording.
   * @param position the live (turn, step) of the requesting session, when known.
   * @throws HarnessError `CASSETTE_MISMATCH` with a readable diff (strict), or when no call is left.
   */
  take(options: GenerateOptions, position?: { turn: number; step: number }): RecordedCall {
    const request = ++this.requests;
    const index = this.nextIndex(position);
    if (index === -1) {
      const where = position ? ` at turn ${position.turn}, step ${position.step}` : '';
      const diff = `request ${request} (${options.provider}/${options.model}, ${options.messages.length} messages): the recording has no unused model call${where} (${this.calls.length} recorded, ${this.unconsumed().length} unused).`;
      this.mismatch(diff);
      throw new HarnessError('CASSETTE_MISMATCH', `Cassette mismatch: ${diff}`, { details: { request } });
    }
    const call = this.calls[index]!;
    const differences = this.compare(call, options);
    if (differences.length > 0) {
      const diff = `request ${request} differs from recorded ${describeCall(call)}:\n${differences.map((d) => `  ${d}`).join('\n')}`;
      this.mismatch(diff);
      if (this.strict) throw new HarnessError('CASSETTE_MISMATCH', `Cassette mismatch: ${diff}`, { details: { request, call: call.index } });
    }
    this.used[index] = true;
    return call;
  }

  /** Serves the next call's recorded chunks (see {@link take}). */
  stream(options: GenerateOptions, position?: { turn: number; step: number }): AsyncIterable<StreamChunk> {
    const call = this.take(options, position);
    const signal = options.signal;
    return (async function* replay() {
      for (const chunk of call.chunks) {
        if (signal?.aborted) throw signal.reason ?? new LlmError('ABORTED', 'The replay was aborted.');
        yield chunk;
      }
      if (call.finish === undefined) {
        throw new LlmError('ABORTED', `The recording cut ${describeCall(call)} here (no finish chunk was recorded).`);
      }
    })();
  }

  private hasherOf(sessionId: string | undefined): RequestHasher {
    let hasher = this.hashers.get(sessionId);
    if (hasher === undefined) {
      hasher = new RequestHasher();
      this.hashers.set(sessionId, hasher);
    }
    return hasher;
  }

  private mismatch(diff: string): void {
    this.mismatches.push(diff);
    this.onMismatch?.(diff);
  }

  private compare(call: RecordedCall, options: GenerateOptions): string[] {
    // A journal with request snapshots: the whole model-visible request (on an alias route, without
    // the provider and the replay state the seam drops for a route of another provider).
    if (call.snapshot?.ok) {
      const alias = this.aliases.has(options.provider);
      if (!alias && this.hasherOf(options.sessionId).hash(options) === call.snapshot.hash) return [];
      // Rebuilt only here (O(its messages)): a matching request is compared on the hash alone.
      const built = call.snapshot.request().request;
      const recorded = alias ? withoutRoute(built) : built;
      const actual = alias ? withoutRoute(canonicalRequest(options)) : canonicalRequest(options);
      const found = firstDifference(recorded, actual, matchesRecorded);
      return found === undefined ? [] : [`${found.path || '(request)'}: ${showDifference(found)}`];
    }
    const out: string[] = [];
    const header = call.header;
    const config = header?.config;
    if (config !== undefined) {
      if (!this.aliases.has(options.provider) && !matchesRecorded(config.provider, options.provider)) {
        out.push(`provider: recorded ${JSON.stringify(config.provider)}, requested ${JSON.stringify(options.provider)}`);
      }
      if (!matchesRecorded(config.model, options.model)) out.push(`model:    recorded ${JSON.stringify(config.model)}, requested ${JSON.stringify(options.model)}`);
    }
    const recordedTools = header?.tools as unknown;
    if (recordedTools !== undefined && !(typeof recordedTools === 'string' && matchesRecorded(recordedTools, undefined))) {
      const recordedNames = Array.isArray(recordedTools) ? recordedTools.map((tool: { name?: unknown }) => String(tool?.name)) : [String(recordedTools)];
      const requestedNames = (options.tools ?? []).map((tool) => tool.name);
      const same = recordedNames.length === requestedNames.length && recordedNames.every((name, i) => matchesRecorded(name, requestedNames[i]));
      if (!same) {
        const missing = recordedNames.filter((name) => !requestedNames.some((r) => matchesRecorded(name, r)));
        const extra = requestedNames.filter((r) => !recordedNames.some((name) => matchesRecorded(name, r)));
        const detail = [missing.length ? `missing ${missing.join(', ')}` : '', extra.length ? `extra ${extra.join(', ')}` : '', !missing.length && !extra.length ? 'different order' : '']
          .filter(Boolean)
          .join('; ');
        out.push(`tools:    recorded [${recordedNames.join(', ')}], requested [${requestedNames.join(', ')}] (${detail})`);
      }
    }
    if (options.messages.length !== call.messageCount) out.push(`messages: recorded ${call.messageCount}, requested ${options.messages.length}`);
    return out;
  }
}

/** A canonical request without what an alias route changes: the provider and messages' replay state. */
function withoutRoute(request: ReturnType<typeof canonicalRequest>): unknown {
  const { provider: _provider, ...config } = request.config;
  return { ...request, config, messages: request.messages.map((message) => ({ role: message.role, content: message.content })) };
}

/** A cassette over events (e.g. `importDshSession(file).events` or a journal's events). */
export function createCassette(events: Iterable<AnySessionEvent>, options: CassetteOptions = {}): Cassette {
  return new Cassette(events, options);
}

/** A cassette from a file: a Harness journal, or a DeepSeek Harness session (imported). */
export async function loadCassette(path: string, options: CassetteOptions = {}): Promise<Cassette> {
  let dsh = false;
  try {
    await readJournalHeader(path);
  } catch (error) {
    if (!(HarnessError.is(error) && error.code === 'JOURNAL_VERSION')) throw error;
    dsh = true;
  }
  if (dsh) return new Cassette((await importDshSession(path)).events, options);
  const events: AnySessionEvent[] = [];
  for await (const event of readJournal(path)) events.push(event);
  return new Cassette(events, options);
}

class ReplayAdapter extends LlmAdapter {
  constructor(
    private readonly cassette: Cassette,
    private readonly positions: Map<string, { turn: number; step: number }>,
  ) {
    super();
  }

  stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    const position = options.sessionId === undefined ? undefined : this.positions.get(options.sessionId);
    return this.cassette.stream(options, position);
  }

  providerInfo(provider: string) {
    return { provider, kind: 'replay', label: 'journal cassette' };
  }
}

function isCassette(value: unknown): value is Cassette {
  return value instanceof Cassette;
}

export default definePlugin({
  name: 'llm-replay',
  config: z
    .strictObject({
      journal: z.string().optional(),
      cassette: z.custom<Cassette>(isCassette, { message: 'expected a Cassette (createCassette(events))' }).optional(),
      provider: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).default('replay'),
      strict: z.boolean().default(true),
    })
    .refine((config) => config.journal !== undefined || config.cassette !== undefined, { message: 'give a journal path or a cassette' }),
  async setup(ctx, config) {
    const onMismatch = (diff: string) => ctx.report({ level: config.strict ? 'error' : 'warning', code: 'CASSETTE_MISMATCH', message: diff });
    const cassette = config.cassette ?? (await loadCassette(config.journal!, { strict: config.strict, onMismatch }));
    const routes = typeof config.provider === 'string' ? [config.provider] : config.provider;
    const recorded = new Set(cassette.providers);
    cassette.addAliases(routes.filter((route) => !recorded.has(route)));
    // Where each live session is, from its journal's deliveries.
    const positions = new Map<string, { turn: number; step: number }>();
    ctx.declareHook('session/event', 'sink');
    ctx.on('session/event', ({ sessionId, event }) => {
      if (event.type === 'step/start') positions.set(sessionId, { turn: event.data.turn, step: event.data.step });
      else if (event.type === 'turn/end') positions.delete(sessionId);
    });
    ctx.llm.registerAdapter(routes, new ReplayAdapter(cassette, positions));
    ctx.provide('cassette', cassette);
  },
});
