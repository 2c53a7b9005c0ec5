/**
 * `checkMiddleware`: the conformance kit for `llm/stream` middleware authors (issue 14.5). It runs a
 * middleware through the real seam over a corpus of representative streams built into the kit —
 * text, signed reasoning, parallel tool calls, a max-tokens cut, an error mid-stream, an abort — and
 * reports every broken invariant of the stream protocol (`StreamChunkMap`):
 *
 * - `finish-once-last`: exactly one `finish`, and nothing after it;
 * - `blocks-well-formed`: small non-negative indexes, at most one `block-start` (before the block's
 *   deltas) and one `block-end` per block, deltas of the block's own type and none after its end,
 *   a `block-end` of a text / reasoning / tool-call block carrying no content (the deltas are it);
 * - `replay-aligned`: a finish's `replayState.blocks` has one entry per block (else the seam drops
 *   the whole envelope and every block loses its replay state);
 * - `replay-not-moved`: a replay entry stays with the content it was made for — never on another
 *   block, never on rewritten content (lock-step, seed 002 14.2);
 * - `usage-not-invented`: the usage the consumer sees is the provider's — no count added, changed or lost;
 * - `abort-propagates`: once the caller's signal fires, the adapter's request is released and the
 *   stream ends `finish{aborted}`;
 * - `middleware-error`: the middleware threw (the stream threw, or ended `PLUGIN_ERROR`).
 *
 * ```ts
 * import { checkMiddleware } from 'harness-runtime/testing';
 * const report = await checkMiddleware((request, next) => rewriteText(next(request), { pattern: /sk-\w{32}/g, replace: '[redacted]', maxMatchLength: 35 }));
 * expect(report.violations).toEqual([]);
 * ```
 */
import { isDeepStrictEqual } from 'node:util';
import {
  BlockAssembler,
  createHarness,
  createUserMessage,
  definePlugin,
  LlmAdapter,
  type AssembledMessage,
  type GenerateOptions,
  type Harness,
  type PluginSpec,
  type ReplayEnvelope,
  type StreamChunk,
  type TokenUsage,
} from '../runtime/index.ts';

/** An `llm/stream` middleware as `ctx.on('llm/stream', …)` takes it. */
export type StreamMiddleware = (request: GenerateOptions, next: (request?: GenerateOptions) => AsyncIterable<StreamChunk>) => AsyncIterable<StreamChunk> | Promise<AsyncIterable<StreamChunk>>;

/** The invariants {@link checkMiddleware} checks (see the module docstring). */
export type MiddlewareInvariant = 'finish-once-last' | 'blocks-well-formed' | 'replay-aligned' | 'replay-not-moved' | 'usage-not-invented' | 'abort-propagates' | 'middleware-error';

/** One broken invariant on one corpus stream. */
export interface MiddlewareViolation {
  /** The corpus stream's name (`text`, `signed-reasoning`, `parallel-tool-calls`, `max-tokens-cut`, `error-mid-stream`, `abort`). */
  readonly stream: string;
  readonly invariant: MiddlewareInvariant;
  readonly message: string;
}

/** What {@link checkMiddleware} found: `ok` when no invariant broke on any stream. */
export interface MiddlewareReport {
  readonly ok: boolean;
  readonly violations: readonly MiddlewareViolation[];
  /** The corpus streams run, by name. */
  readonly streams: readonly string[];
}

/** Options of {@link checkMiddleware}. */
export interface CheckMiddlewareOptions {
  /** Only these corpus streams (by name); default all. */
  readonly streams?: readonly string[];
  /** Chunks the abort stream may still take after the abort before it counts as not propagated. Default 50 (of 400). */
  readonly abortSlackChunks?: number;
}

// ── The corpus (written for the kit: every shape a middleware meets) ─────────────────────────────

interface CorpusStream {
  readonly name: string;
  readonly chunks: readonly StreamChunk[];
}

const envelope = (blocks: readonly unknown[]): ReplayEnvelope => ({ response: { kind: 'conformance-kit', version: 1, id: 'resp_kit' }, blocks });

const CORPUS: readonly CorpusStream[] = [
  {
    name: 'text',
    chunks: [
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'text-delta', index: 0, text: 'Hello, ' },
      { type: 'text-delta', index: 0, text: 'wor' },
      { type: 'text-delta', index: 0, text: 'ld! The key is sk-kit-' },
      { type: 'text-delta', index: 0, text: '0123456789abcdef0123456789abcdef.' },
      { type: 'block-end', index: 0 },
      { type: 'usage', usage: { inputTokens: 12, outputTokens: 9 } },
      { type: 'finish', finish: { kind: 'stop' }, replayState: envelope([{ item: 'msg_1' }]) },
    ],
  },
  {
    name: 'signed-reasoning',
    chunks: [
      { type: 'block-start', index: 0, blockType: 'reasoning' },
      { type: 'reasoning-delta', index: 0, text: 'Think: the user ' },
      { type: 'reasoning-delta', index: 0, text: 'wants a number.' },
      { type: 'block-end', index: 0 },
      { type: 'block-start', index: 1, blockType: 'reasoning' },
      { type: 'block-end', index: 1, block: { type: 'reasoning', text: '', redacted: true } },
      { type: 'text-delta', index: 2, text: '42' },
      { type: 'block-end', index: 2 },
      { type: 'usage', usage: { inputTokens: 30, cacheReadTokens: 100, outputTokens: 50, reasoningTokens: 40 } },
      { type: 'finish', finish: { kind: 'stop' }, replayState: envelope([{ signature: 'sig-A-0f3e' }, { data: 'redacted-blob-77' }, null]) },
    ],
  },
  {
    name: 'parallel-tool-calls',
    chunks: [
      { type: 'text-delta', index: 0, text: 'Checking both.' },
      { type: 'block-end', index: 0 },
      { type: 'block-start', index: 1, blockType: 'tool-call', id: 'call_a', name: 'weather' },
      { type: 'block-start', index: 2, blockType: 'tool-call', id: 'call_b', name: 'stock' },
      { type: 'tool-call-delta', index: 1, arguments: '{"ci' },
      { type: 'tool-call-delta', index: 2, arguments: '{"ticker":' },
      { type: 'tool-call-delta', index: 1, arguments: 'ty":"Oslo"}' },
      { type: 'tool-call-delta', index: 2, arguments: '"ACME"}' },
      { type: 'block-end', index: 1 },
      { type: 'block-end', index: 2 },
      { type: 'usage', usage: { inputTokens: 80 } },
      { type: 'usage', usage: { outputTokens: 31 } },
      { type: 'finish', finish: { kind: 'tool-calls' }, replayState: envelope([null, { item: 'fc_a' }, { item: 'fc_b' }]) },
    ],
  },
  {
    name: 'max-tokens-cut',
    chunks: [
      { type: 'text-delta', index: 0, text: 'Writing the file now' },
      { type: 'block-end', index: 0 },
      { type: 'block-start', index: 1, blockType: 'tool-call', id: 'call_cut', name: 'write_file' },
      { type: 'tool-call-delta', index: 1, arguments: '{"path":"a.txt","text":"lo' },
      { type: 'usage', usage: { inputTokens: 40, outputTokens: 64 } },
      { type: 'finish', finish: { kind: 'max-tokens' }, replayState: envelope([{ item: 'msg_cut' }, { item: 'fc_cut' }]) },
    ],
  },
  {
    name: 'error-mid-stream',
    chunks: [
      { type: 'text-delta', index: 0, text: 'Partial ans' },
      { type: 'text-delta', index: 0, text: 'wer' },
      { type: 'finish', finish: { kind: 'error', failure: { code: 'SERVER', message: 'Provider "kit": overloaded mid-stream (conformance kit).' } } },
    ],
  },
];

/** The abort stream: up to this many text deltas, a few ms apart, until the signal fires. */
const ABORT_DELTAS = 400;
const ABORT_STREAM = 'abort';

/** What the corpus adapter saw of the abort stream. */
interface AbortProbe {
  produced: number;
  producedAtAbort: number;
  released: boolean;
  completed: boolean;
}

class CorpusAdapter extends LlmAdapter {
  override readonly replayFormat = { kind: 'conformance-kit', version: 1 };
  probe: AbortProbe = { produced: 0, producedAtAbort: -1, released: false, completed: false };

  async *stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    if (options.model === ABORT_STREAM) {
      yield* this.abortStream(options);
      return;
    }
    const corpus = CORPUS.find((stream) => stream.name === options.model);
    if (corpus === undefined) throw new Error(`conformance kit: no corpus stream "${options.model}"`);
    for (const chunk of corpus.chunks) yield chunk;
  }

  private async *abortStream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    const probe: AbortProbe = { produced: 0, producedAtAbort: -1, released: false, completed: false };
    this.probe = probe;
    const signal = options.signal;
    const onAbort = (): void => {
      probe.producedAtAbort = probe.produced;
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      yield { type: 'block-start', index: 0, blockType: 'text' };
      for (let i = 0; i < ABORT_DELTAS; i++) {
        if (signal?.aborted) {
          yield { type: 'finish', finish: { kind: 'aborted', failure: { code: 'ABORTED', message: 'The request was aborted.' } } };
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
        probe.produced++;
        yield { type: 'text-delta', index: 0, text: `tick ${i} ` };
      }
      yield { type: 'block-end', index: 0 };
      yield { type: 'usage', usage: { inputTokens: 5, outputTokens: ABORT_DELTAS } };
      probe.completed = true;
      yield { type: 'finish', finish: { kind: 'stop' } };
    } finally {
      signal?.removeEventListener('abort', onAbort);
      probe.released = true;
    }
  }
}

// ── The check ────────────────────────────────────────────────────────────────────────────────

/**
 * Runs `middleware` — a middleware function, or the plugin(s) that register theirs — over the kit's
 * corpus through the real `llm/stream` seam, each stream beside a run without it, and reports every
 * broken invariant (see the module docstring). Never throws for a broken middleware: read
 * `report.violations`.
 * @throws HarnessError as `createHarness` when a given plugin fails to load.
 */
export async function checkMiddleware(middleware: StreamMiddleware | PluginSpec | readonly PluginSpec[], options: CheckMiddlewareOptions = {}): Promise<MiddlewareReport> {
  const names = options.streams ?? [...CORPUS.map((stream) => stream.name), ABORT_STREAM];
  const slack = options.abortSlackChunks ?? 50;
  const baseAdapter = new CorpusAdapter();
  const testedAdapter = new CorpusAdapter();
  const specs: PluginSpec[] =
    typeof middleware === 'function'
      ? [{ plugin: definePlugin({ name: 'middleware-under-test', setup: (ctx) => void ctx.on('llm/stream', (request, next) => middleware(request, next as never) as never) }) }]
      : Array.isArray(middleware)
        ? [...(middleware as readonly PluginSpec[])]
        : [middleware as PluginSpec];
  const corpusPlugin = (adapter: CorpusAdapter): PluginSpec => ({ plugin: definePlugin({ name: 'conformance-kit', setup: (ctx) => void ctx.llm.registerAdapter(['kit'], adapter) }) });
  const baseline = await createHarness({ config: { plugins: [corpusPlugin(baseAdapter)] } });
  let tested: Harness | undefined;
  const violations: MiddlewareViolation[] = [];
  try {
    tested = await createHarness({ config: { plugins: [corpusPlugin(testedAdapter), ...specs] } });
    for (const name of names) {
      const found = (invariant: MiddlewareInvariant, message: string) => violations.push({ stream: name, invariant, message });
      if (name === ABORT_STREAM) {
        await checkAbort(tested, testedAdapter, slack, found);
        continue;
      }
      if (!CORPUS.some((stream) => stream.name === name)) throw new TypeError(`checkMiddleware: no corpus stream "${name}" (known: ${CORPUS.map((s) => s.name).join(', ')}, ${ABORT_STREAM}).`);
      const expected = await collect(baseline, name);
      const actual = await collect(tested, name);
      checkStream(expected, actual, found);
    }
  } finally {
    await tested?.dispose();
    await baseline.dispose();
  }
  return { ok: violations.length === 0, violations, streams: names };
}

interface Collected {
  readonly chunks: StreamChunk[];
  readonly result: AssembledMessage | undefined;
  readonly assembleError?: string;
  readonly thrown?: string;
}

async function collect(harness: Harness, model: string, signal?: AbortSignal, onChunk?: (chunk: StreamChunk) => void): Promise<Collected> {
  const chunks: StreamChunk[] = [];
  const assembler = new BlockAssembler();
  let assembleError: string | undefined;
  try {
    for await (const chunk of harness.llm.stream({ provider: 'kit', model, messages: [createUserMessage('conformance check')], ...(signal ? { signal } : {}) })) {
      chunks.push(chunk);
      onChunk?.(chunk);
      if (assembleError !== undefined) continue;
      try {
        assembler.push(chunk);
      } catch (error) {
        assembleError = error instanceof Error ? error.message : String(error);
      }
    }
  } catch (error) {
    return { chunks, result: undefined, thrown: error instanceof Error ? error.message : String(error) };
  }
  let result: AssembledMessage | undefined;
  if (assembleError === undefined) {
    try {
      result = assembler.result();
    } catch (error) {
      assembleError = error instanceof Error ? error.message : String(error);
    }
  }
  return assembleError === undefined ? { chunks, result } : { chunks, result, assembleError };
}

type Found = (invariant: MiddlewareInvariant, message: string) => void;

function checkStream(expected: Collected, actual: Collected, found: Found): void {
  if (actual.thrown !== undefined) {
    found('middleware-error', `the stream threw instead of ending with a finish (in a session the call ends PLUGIN_ERROR): ${actual.thrown}`);
    return;
  }
  checkFinish(actual.chunks, found);
  checkBlocks(actual.chunks, found);
  if (actual.assembleError !== undefined) found('blocks-well-formed', `the assembler refused the stream: ${actual.assembleError}`);
  const finish = actual.chunks.findLast((chunk) => chunk.type === 'finish');
  if (finish?.finish.kind === 'error' && finish.finish.failure.code === 'PLUGIN_ERROR') found('middleware-error', finish.finish.failure.message);
  const before = expected.result;
  const after = actual.result;
  if (before === undefined || after === undefined) return;
  checkReplay(before, after, finish?.replayState, blockCount(actual.chunks), found);
  checkUsage(before.usage, after.usage, found);
}

function checkFinish(chunks: readonly StreamChunk[], found: Found): void {
  const finishes = chunks.filter((chunk) => chunk.type === 'finish').length;
  if (finishes !== 1) found('finish-once-last', `${finishes} finish chunks (exactly one is allowed)`);
  else if (chunks.at(-1)?.type !== 'finish')
    found(
      'finish-once-last',
      `chunks after the finish: ${chunks
        .slice(chunks.findIndex((c) => c.type === 'finish') + 1)
        .map((c) => c.type)
        .join(', ')}`,
    );
}

const DELTA_BLOCK: Record<string, string> = { 'text-delta': 'text', 'reasoning-delta': 'reasoning', 'tool-call-delta': 'tool-call' };

function checkBlocks(chunks: readonly StreamChunk[], found: Found): void {
  const types = new Map<number, string>();
  const started = new Set<number>();
  const ended = new Set<number>();
  const withDeltas = new Set<number>();
  for (const chunk of chunks) {
    if (chunk.type === 'usage' || chunk.type === 'finish') continue;
    const index = (chunk as { index?: unknown }).index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > 10_000) {
      found('blocks-well-formed', `a ${chunk.type} chunk with index ${JSON.stringify(index)} (a small non-negative integer is required)`);
      continue;
    }
    if (chunk.type === 'block-start') {
      if (started.has(index)) found('blocks-well-formed', `block ${index} started twice`);
      else if (withDeltas.has(index)) found('blocks-well-formed', `block ${index} started after its deltas`);
      started.add(index);
      const known = types.get(index);
      if (known !== undefined && known !== chunk.blockType) found('blocks-well-formed', `block ${index} started as ${chunk.blockType} after ${known} content`);
      types.set(index, chunk.blockType);
    } else if (chunk.type === 'block-end') {
      if (ended.has(index)) found('blocks-well-formed', `block ${index} ended twice`);
      ended.add(index);
      const block = chunk.block as { type?: string; text?: string; arguments?: string } | undefined;
      if (block !== undefined && withDeltas.has(index) && ((typeof block.text === 'string' && block.text !== '') || (typeof block.arguments === 'string' && block.arguments !== ''))) {
        found('blocks-well-formed', `block-end of block ${index} repeats content (${block.type}): the deltas are the content, block-end carries attributes only`);
      }
    } else if (DELTA_BLOCK[chunk.type] !== undefined) {
      const type = DELTA_BLOCK[chunk.type]!;
      if (ended.has(index)) found('blocks-well-formed', `a ${chunk.type} for block ${index} after its block-end`);
      const known = types.get(index);
      if (known !== undefined && known !== type) found('blocks-well-formed', `a ${chunk.type} in ${known} block ${index}`);
      types.set(index, known ?? type);
      withDeltas.add(index);
    } else {
      found('blocks-well-formed', `an unknown chunk type ${JSON.stringify((chunk as { type?: unknown }).type)}`);
    }
  }
}

function blockCount(chunks: readonly StreamChunk[]): number {
  const indexes = new Set<number>();
  for (const chunk of chunks) if (chunk.type !== 'usage' && chunk.type !== 'finish') indexes.add(chunk.index);
  return indexes.size;
}

function checkReplay(before: AssembledMessage, after: AssembledMessage, raw: ReplayEnvelope | undefined, blocks: number, found: Found): void {
  if (raw?.blocks !== undefined && raw.blocks.length !== blocks) {
    found('replay-aligned', `finish.replayState.blocks has ${raw.blocks.length} entries for ${blocks} blocks: the seam drops the whole envelope`);
  }
  const entries = after.replayState?.blocks;
  if (entries === undefined) return;
  if (entries.length !== after.content.length) found('replay-aligned', `${entries.length} replay entries for ${after.content.length} blocks`);
  const original = before.replayState?.blocks ?? [];
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    if (entry === null || entry === undefined) continue;
    const owner = original.findIndex((candidate) => candidate !== null && isDeepStrictEqual(candidate, entry));
    if (owner === -1) found('replay-not-moved', `block ${i} carries replay state the provider never sent: ${JSON.stringify(entry)}`);
    else if (!isDeepStrictEqual(before.content[owner], after.content[i])) {
      found('replay-not-moved', `block ${i} (${after.content[i]?.type}) carries the replay state of the provider's block ${owner} (${before.content[owner]?.type}), made for other content`);
    }
  }
}

function checkUsage(before: TokenUsage | undefined, after: TokenUsage | undefined, found: Found): void {
  const a = (before ?? {}) as Record<string, number | undefined>;
  const b = (after ?? {}) as Record<string, number | undefined>;
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (a[key] === b[key]) continue;
    if (a[key] === undefined) found('usage-not-invented', `usage ${key}: ${b[key]} where the provider reported none`);
    else if (b[key] === undefined) found('usage-not-invented', `usage ${key}: the provider's ${a[key]} was lost`);
    else found('usage-not-invented', `usage ${key}: ${b[key]} where the provider reported ${a[key]}`);
  }
}

async function checkAbort(harness: Harness, adapter: CorpusAdapter, slack: number, found: Found): Promise<void> {
  const controller = new AbortController();
  const collected = await collect(harness, ABORT_STREAM, controller.signal, (chunk) => {
    if (chunk.type === 'text-delta' && !controller.signal.aborted) controller.abort(new Error('conformance kit: the caller aborted'));
  });
  if (collected.thrown !== undefined) {
    found('middleware-error', `the aborted stream threw instead of ending with finish{aborted}: ${collected.thrown}`);
    return;
  }
  checkFinish(collected.chunks, found);
  const finish = collected.chunks.findLast((chunk) => chunk.type === 'finish');
  if (finish?.finish.kind !== 'aborted') found('abort-propagates', `the aborted stream ended with finish{${finish?.finish.kind ?? 'none'}}, not finish{aborted}`);
  // The adapter's generator is released by the seam right after the terminal chunk; give it a moment.
  for (let i = 0; i < 50 && !adapter.probe.released; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const probe = adapter.probe;
  if (probe.producedAtAbort < 0) found('abort-propagates', "the caller's signal never reached the adapter (was the request passed on without its signal?)");
  else if (probe.completed || probe.produced - probe.producedAtAbort > slack) {
    found('abort-propagates', `the adapter produced ${probe.produced - probe.producedAtAbort} more chunks after the abort${probe.completed ? ', to the end of its stream' : ''}`);
  }
  if (!probe.released) found('abort-propagates', "the adapter's stream was not released after the abort (its request would stay open)");
}
