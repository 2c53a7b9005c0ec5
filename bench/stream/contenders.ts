/**
 * The stream bench's contenders, and its consumer-process entry point.
 *
 * Each contender consumes one served stream completely per call and reports what it saw:
 * - `raw`: the official SDK Harness itself uses — the ROOT install's `openai` / `@anthropic-ai/sdk`,
 *   the very module instances the adapter plugins import (not pi-ai's older copies in
 *   bench/node_modules) — `chat.completions.create` / `messages.create` with `stream: true`, retries
 *   off, iterating its events and counting them: the baseline and practical limit;
 * - `floor`: the journal floor — `raw` plus only what the journal contract (DESIGN "Sessions and the
 *   journal") needs per event, and no runtime: one record object per SDK event with `seq` and
 *   `atMs`, one `JSON.stringify` line, the lines batched and written with one `write(2)` per
 *   64 KiB or 100 ms (one in flight), fsync at the end (see {@link JournalFloor}); and for the tool
 *   calls of the message the records, one checkpoint and the bodies the loop runs
 *   ({@link floorToolCalls}); its ratio to raw is what any implementation of the contract pays;
 * - `loop`: the whole agent loop as it ships — `session.run` on a harness with the two adapter
 *   plugins and no `llm/stream` middleware (see {@link loopTurn}); `loop-mw`: the same with the 3
 *   pass-through middlewares below (what a plugin author's middleware adds on top);
 * - `harness`: what the agent loop does per model call (runtime/agent/session.ts `streamCall`):
 *   checkpoint, `prepareCall`, `prepared.stream()` through the adapter plugin and the `llm/stream`
 *   waterfall with 3 pass-through middlewares (async generators, as a plugin author writes them:
 *   `async function* (request, next) { for await (const chunk of next()) yield chunk; }`), the
 *   BlockAssembler, one `assistant/chunk` record per chunk in a real FileJournal (temp dir), the
 *   assembled `assistant/message`, and the closing checkpoint;
 * - `vercel`: the Vercel AI SDK `streamText` (@ai-sdk/openai `.chat()` / @ai-sdk/anthropic, retries
 *   off, the same tools declared with JSON schemas) consuming `fullStream`;
 * - `pi`: `@mariozechner/pi-ai` `stream()` with a model whose `baseUrl` is the loopback server.
 *
 * Entry (one consumer process per measurement batch, spawned by bench/stream.ts):
 * `node --import tsx --expose-gc contenders.ts <contender> <stream> <warmups> <runs> <servedJson> [heapRuns] [warmupEvents]` →
 * prints `{ samples: [{ cpuUs, wallMs, items, blocks, finish }], heapSamples: [bytes], cold, warmupCount }`.
 * The warm-ups run until at least `warmups` streams and `warmupEvents` SSE events were consumed:
 * V8 settles by the events it has run, not by the streams (a fresh process reached its steady state
 * after ~30–40k events here — 7 of the 5,000-event streams; after 2 the raw SDK still cost 2.5x its
 * steady state and the loop 3x). The first warm-up is reported as `cold` (what a fresh process
 * pays); it always runs, so there is at least one warm-up. After the warm-ups, the CPU runs follow each other as a long-lived process's turns do (no
 * forced GC between them: a full GC before each run deoptimises code whose maps died in it, and
 * the re-optimisation then lands in the measured run — in one test it cost the loop ~30 µs per
 * event and raw ~8); then the heap runs, each after a full GC (heap bytes need a clean start).
 * CPU = process user + system over the whole consumption (the server is another process).
 */
import { close as fsClose, fsync as fsFsync, mkdirSync, mkdtempSync, openSync, rmSync, write as fsWrite, writeFileSync } from 'node:fs';
import { GCProfiler, getHeapStatistics } from 'node:v8';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { z } from 'zod';
import { defineTool } from '../../runtime/agent/tools.ts';
import type { ApprovalAnswer } from '../../runtime/agent/approval.ts';
import { createHarness, type Harness } from '../../runtime/harness.ts';
import { BlockAssembler } from '../../runtime/llm/assembler.ts';
import { markAgentLoopRequest } from '../../runtime/llm/call-config.ts';
import { createAssistantMessage, createUserMessage } from '../../runtime/llm/message.ts';
import type { StreamChunk, ToolSpec } from '../../runtime/llm/types.ts';
import { createJournal } from '../../runtime/session/journal.ts';
import type { SessionJournal } from '../../runtime/session/types.ts';
import { projectRoot } from '../../test/support/fixture-server.ts';
import { answer, collectGarbage, cpuMicros, isMain } from '../support.ts';
import { importPeer, importRootPackage } from '../peers.ts';
import { providerOf, STREAMS, type ServedStream, type StreamName } from './server.ts';

export const CONTENDERS = ['raw', 'floor', 'harness', 'loop', 'loop-mw', 'vercel', 'pi'] as const;
export type Contender = (typeof CONTENDERS)[number];

/** What one consumption saw: items iterated, content blocks recognised, and how it finished. */
export interface Consumed {
  readonly items: number;
  /** Content blocks the contender assembled or announced (checked against the served stream). */
  readonly blocks: number;
  readonly finish: string;
}

export type Consume = () => Promise<Consumed>;
export type Served = Record<StreamName, ServedStream>;

const KEY = 'bench-key';
const MODELS: Record<'openai' | 'anthropic', string> = { openai: 'gpt-4o-2024-08-06', anthropic: 'claude-sonnet-4-20250514' };

/** The two tools of the OpenAI recording, declared the same way to every contender. */
const TOOLS: readonly ToolSpec[] = [
  {
    name: 'GetWeatherArgs',
    description: 'Current weather in a city.',
    inputSchema: { type: 'object', properties: { city: { type: 'string' }, country: { type: 'string' }, units: { type: 'string' } }, required: ['city'] },
  },
  {
    name: 'get_stock_price',
    description: 'The latest price of a stock.',
    inputSchema: { type: 'object', properties: { symbol: { type: 'string' } }, required: ['symbol'] },
  },
];

// ── (a) raw SDK ───────────────────────────────────────────────────────────────────────────────────

export async function rawContender(served: Served): Promise<Record<StreamName, Consume>> {
  const { default: OpenAISdk } = await importRootPackage<{ default: typeof OpenAI }>('openai');
  const { default: AnthropicSdk } = await importRootPackage<{ default: typeof Anthropic }>('@anthropic-ai/sdk');
  const tools = TOOLS.map((tool) => ({ type: 'function' as const, function: { name: tool.name, description: tool.description, parameters: tool.inputSchema as Record<string, unknown> } }));
  const openaiStream = (url: string): Consume => {
    const openai = new OpenAISdk({ apiKey: KEY, baseURL: url, maxRetries: 0 });
    return async () => {
      const stream = await openai.chat.completions.create({ model: MODELS.openai, messages: [{ role: 'user', content: 'hi' }], tools, stream: true, stream_options: { include_usage: true } });
      let items = 0;
      for await (const _event of stream) items++;
      return { items, blocks: -1, finish: 'n/a' };
    };
  };
  const anthropicStream = (url: string): Consume => {
    const anthropic = new AnthropicSdk({ apiKey: KEY, baseURL: url, maxRetries: 0 });
    return async () => {
      const stream = await anthropic.messages.create({
        model: MODELS.anthropic,
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      let items = 0;
      for await (const _event of stream) items++;
      return { items, blocks: -1, finish: 'n/a' };
    };
  };
  return {
    openai: openaiStream(served.openai.url),
    anthropic: anthropicStream(served.anthropic.url),
    'openai-tools': openaiStream(served['openai-tools'].url),
    'anthropic-tools': anthropicStream(served['anthropic-tools'].url),
  };
}

/** What every bench tool answers (the loop's tools and the floor's calls alike). */
const BENCH_TOOL_ANSWER = 'sunny, 21 °C';

// ── (a′) the journal floor ──────────────────────────────────────────────────────────────────────

/** Bytes queued before a write, and the longest a line waits for one (the writer's defaults). */
const FLOOR_FLUSH_BYTES = 64 * 1024;
const FLOOR_FLUSH_MS = 100;

/**
 * The least a journal with one record per chunk can do: a record `{ seq, type, atMs, data }` per
 * event, `JSON.stringify` of it, the lines concatenated and written as one `write(2)` when 64 KiB
 * are queued or 100 ms after the first line of a batch (one write in flight; what comes meanwhile
 * waits for the next), and at the end everything written and fsynced. No validation, no freeze, no
 * fold, no assembler, no events to a consumer: what is left of the loop's cost above this is the
 * runtime's, not the contract's.
 */
export class JournalFloor {
  private seq = 0;
  private pending = '';
  private writing = false;
  private timer: NodeJS.Timeout | undefined;
  private failure: Error | undefined;
  private idle: (() => void) | undefined;
  /** Bytes of the lines (with their `\n`) appended, in UTF-16 code units. */
  lineChars = 0;

  private constructor(private readonly fd: number) {}

  static create(path: string): JournalFloor {
    return new JournalFloor(openSync(path, 'a'));
  }

  append(type: string, data: unknown): void {
    const line = JSON.stringify({ seq: ++this.seq, type, atMs: Date.now(), data });
    this.pending += `${line}\n`;
    this.lineChars += line.length + 1;
    if (this.pending.length >= FLOOR_FLUSH_BYTES) this.write();
    else if (this.timer === undefined) this.timer = setTimeout(this.onTimer, FLOOR_FLUSH_MS);
  }

  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.write();
  };

  private write(): void {
    if (this.writing || this.pending.length === 0) return;
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const buffer = Buffer.from(this.pending, 'utf8');
    this.pending = '';
    this.writing = true;
    this.writeAll(buffer, 0);
  }

  private writeAll(buffer: Buffer, offset: number): void {
    fsWrite(this.fd, buffer, offset, buffer.length - offset, null, (error, written) => {
      if (error) this.failure = error;
      else if (offset + written < buffer.length) return this.writeAll(buffer, offset + written);
      this.writing = false;
      if (this.pending.length >= FLOOR_FLUSH_BYTES) this.write();
      else if (this.pending.length > 0 && this.timer === undefined) this.timer = setTimeout(this.onTimer, FLOOR_FLUSH_MS);
      const idle = this.idle;
      this.idle = undefined;
      idle?.();
    });
  }

  /** Writes everything queued and fsyncs (a checkpoint). */
  async sync(): Promise<void> {
    while (this.writing || this.pending.length > 0) {
      const done = new Promise<void>((resolve) => (this.idle = resolve));
      this.write();
      await done;
    }
    if (this.failure) throw this.failure;
    await new Promise<void>((resolve, reject) => fsFsync(this.fd, (error) => (error ? reject(error) : resolve())));
  }

  /** Writes everything queued, fsyncs and closes the file. */
  async close(): Promise<void> {
    await this.sync();
    await new Promise<void>((resolve, reject) => fsClose(this.fd, (error) => (error ? reject(error) : resolve())));
  }
}

/** A tool call as the floor collects it from the stream: what it needs to run the call. */
interface FloorCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * What the journal contract needs for the tool calls of one message, and nothing else (DESIGN
 * "Durability"; seed 000 "内层工具契约"): the message, a `tool/call`, `approval/decided` and
 * `tool/start` record per call, ONE checkpoint (write + fsync) covering every `tool/start`, then
 * each call's arguments parsed and its body run (the bench tools' answer), and a `tool/result`
 * record with the result message per call — as the loop does for calls approved at once. No
 * schema, no approver, no close-out (timeout, cap, abort), no fold.
 */
async function floorToolCalls(journal: JournalFloor, calls: readonly FloorCall[]): Promise<void> {
  if (calls.length === 0) return;
  journal.append('assistant/message', {
    turn: 1,
    step: 1,
    message: { role: 'assistant', content: calls.map((call) => ({ type: 'tool-call', id: call.id, name: call.name, arguments: call.arguments })) },
    finish: { kind: 'tool-calls' },
  });
  for (const call of calls) journal.append('tool/call', { turn: 1, step: 1, callId: call.id, name: call.name, arguments: call.arguments });
  for (const call of calls) {
    journal.append('approval/decided', { turn: 1, step: 1, callId: call.id, decision: 'allow', decidedBy: 'policy' });
    journal.append('tool/start', { turn: 1, step: 1, callId: call.id });
  }
  await journal.sync();
  const outputs = calls.map((call) => {
    JSON.parse(call.arguments === '' ? '{}' : call.arguments);
    return BENCH_TOOL_ANSWER;
  });
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]!;
    journal.append('tool/result', { turn: 1, step: 1, callId: call.id, message: { role: 'tool', callId: call.id, content: [{ type: 'text', text: outputs[i] }], isError: false }, durationMs: 0 });
  }
}

/**
 * The journal floor contender: the raw SDK streams of {@link rawContender}, each event journaled by
 * a {@link JournalFloor} as `assistant/chunk` `{ turn, step, chunk }` — the chunk being what the
 * event carries (OpenAI: `choices[0]` with its delta, or the event when it has none — the usage
 * chunk; Anthropic: the event), so a line is about the size of the loop's chunk records.
 */
export async function floorContender(served: Served): Promise<{ consume: Record<StreamName, Consume>; close(): Promise<void> }> {
  const { default: OpenAISdk } = await importRootPackage<{ default: typeof OpenAI }>('openai');
  const { default: AnthropicSdk } = await importRootPackage<{ default: typeof Anthropic }>('@anthropic-ai/sdk');
  const dir = mkdtempSync(join(tmpdir(), 'harness-bench-floor-'));
  let files = 0;
  const tools = TOOLS.map((tool) => ({ type: 'function' as const, function: { name: tool.name, description: tool.description, parameters: tool.inputSchema as Record<string, unknown> } }));
  const openaiStream = (url: string): Consume => {
    const openai = new OpenAISdk({ apiKey: KEY, baseURL: url, maxRetries: 0 });
    return async () => {
      const journal = JournalFloor.create(join(dir, `${files++}.jsonl`));
      const stream = await openai.chat.completions.create({ model: MODELS.openai, messages: [{ role: 'user', content: 'hi' }], tools, stream: true, stream_options: { include_usage: true } });
      let items = 0;
      const calls: FloorCall[] = [];
      for await (const event of stream) {
        items++;
        journal.append('assistant/chunk', { turn: 1, step: 1, chunk: event.choices[0] ?? event });
        // Tool-call deltas: the first of an index names the call, the rest carry argument text.
        const deltas = event.choices[0]?.delta?.tool_calls;
        if (deltas !== undefined) {
          for (const delta of deltas) {
            let call = calls[delta.index];
            if (call === undefined) {
              call = { id: '', name: '', arguments: '' };
              calls[delta.index] = call;
            }
            if (delta.id) call.id = delta.id;
            if (delta.function?.name) call.name = delta.function.name;
            if (delta.function?.arguments) call.arguments += delta.function.arguments;
          }
        }
      }
      await floorToolCalls(journal, calls);
      await journal.close();
      return { items, blocks: -1, finish: 'n/a' };
    };
  };
  const anthropicStream = (url: string): Consume => {
    const anthropic = new AnthropicSdk({ apiKey: KEY, baseURL: url, maxRetries: 0 });
    return async () => {
      const journal = JournalFloor.create(join(dir, `${files++}.jsonl`));
      const stream = await anthropic.messages.create({
        model: MODELS.anthropic,
        max_tokens: 4096,
        thinking: { type: 'enabled', budget_tokens: 2048 },
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      let items = 0;
      const calls: FloorCall[] = [];
      let open: FloorCall | undefined;
      for await (const event of stream) {
        items++;
        journal.append('assistant/chunk', { turn: 1, step: 1, chunk: event });
        if (event.type === 'content_block_start') {
          open = event.content_block.type === 'tool_use' ? { id: event.content_block.id, name: event.content_block.name, arguments: '' } : undefined;
          if (open !== undefined) calls.push(open);
        } else if (event.type === 'content_block_delta' && event.delta.type === 'input_json_delta' && open !== undefined) open.arguments += event.delta.partial_json;
      }
      await floorToolCalls(journal, calls);
      await journal.close();
      return { items, blocks: -1, finish: 'n/a' };
    };
  };
  return {
    consume: {
      openai: openaiStream(served.openai.url),
      anthropic: anthropicStream(served.anthropic.url),
      'openai-tools': openaiStream(served['openai-tools'].url),
      'anthropic-tools': anthropicStream(served['anthropic-tools'].url),
    },
    close: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

// ── (b) Harness ───────────────────────────────────────────────────────────────────────────────────

/**
 * The tools the recorded streams call (OpenAI: GetWeatherArgs and get_stock_price; the -tools
 * streams: get_weather), registered for the loop so its calls take the real path — parsed,
 * approved, journaled (`approval/decided`, `tool/start`, a checkpoint before the body), run and
 * answered — and not the unknown-tool error path. Each returns a short string.
 */
export const BENCH_TOOLS = ['GetWeatherArgs', 'get_stock_price', 'get_weather'].map((name) =>
  defineTool({ name, description: `Bench tool ${name}: answers at once.`, input: z.looseObject({}), permission: 'read', execute: () => BENCH_TOOL_ANSWER }),
);

/** The loop's approver: every call allowed (hoisted: no closure per call). */
export function allowAll(): ApprovalAnswer {
  return 'allow';
}

/** The pass-through middleware, as a plugin author writes it (hoisted: no closure per call). */
export async function* passThrough(_request: unknown, next: () => AsyncIterable<StreamChunk>): AsyncGenerator<StreamChunk> {
  for await (const chunk of next()) yield chunk;
}

export interface HarnessRig {
  readonly harness: Harness;
  readonly dataDir: string;
  readonly consume: Record<StreamName, Consume>;
  /** The whole agent loop: one `session.run` turn per consumption. */
  readonly loop: Record<StreamName, Consume>;
  /** The journal file of the last consumption. */
  lastJournalPath: string | undefined;
  close(): Promise<void>;
}

const STREAM_NAMES = Object.keys(STREAMS) as StreamName[];
/** The harness route of a stream: `bench-<stream>`. */
function routeOf(stream: StreamName): string {
  return `bench-${stream}`;
}

/**
 * A harness with the llm-openai and llm-anthropic plugins routed at the served streams and
 * `middlewares` pass-through middlewares on `llm/stream`. Each consumption writes a new journal.
 */
export async function harnessRig(served: Served, middlewares = 3): Promise<HarnessRig> {
  process.env.HARNESS_BENCH_KEY = KEY;
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-bench-stream-'));
  const harness = await createHarness({
    dataDir,
    config: {
      plugins: [
        {
          module: join(projectRoot, 'plugins/llm-openai/index.ts'),
          config: {
            providers: Object.fromEntries(
              STREAM_NAMES.filter((stream) => providerOf(stream) === 'openai').map((stream) => [
                routeOf(stream),
                { api: 'chat', baseURL: served[stream].url, apiKeyEnv: 'HARNESS_BENCH_KEY', allowUnknownModels: true },
              ]),
            ),
          },
        },
        {
          module: join(projectRoot, 'plugins/llm-anthropic/index.ts'),
          config: {
            providers: Object.fromEntries(
              STREAM_NAMES.filter((stream) => providerOf(stream) === 'anthropic').map((stream) => [
                routeOf(stream),
                {
                  baseURL: served[stream].url,
                  apiKeyEnv: 'HARNESS_BENCH_KEY',
                  models: [{ id: MODELS.anthropic, maxOutputTokens: 4096, reasoningEfforts: ['low'], thinking: 'budget', thinkingBudgets: { low: 2048 } }],
                },
              ]),
            ),
          },
        },
      ],
    },
  });
  for (let i = 0; i < middlewares; i++) harness.ctx.on('llm/stream', passThrough as never);
  for (const tool of BENCH_TOOLS) harness.ctx.tools.register(tool);
  let sessionCount = 0;
  const rig: HarnessRig = {
    harness,
    dataDir,
    lastJournalPath: undefined,
    consume: Object.fromEntries(STREAM_NAMES.map((stream) => [stream, () => harnessCall(rig, routeOf(stream), MODELS[providerOf(stream)], `bench-${sessionCount++}`)])) as Record<StreamName, Consume>,
    loop: Object.fromEntries(STREAM_NAMES.map((stream) => [stream, () => loopTurn(rig, routeOf(stream), MODELS[providerOf(stream)])])) as Record<StreamName, Consume>,
    async close() {
      await harness.dispose();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return rig;
}

/** One model call the way the agent loop makes it (runtime/agent/session.ts runStep + streamCall). */
async function harnessCall(rig: HarnessRig, provider: string, model: string, id: string): Promise<Consumed> {
  const { harness } = rig;
  const journal: SessionJournal = await createJournal({ dataDir: harness.dataDir, id, bus: harness.kernel.bus });
  rig.lastJournalPath = journal.path;
  const turn = 1;
  const step = 1;
  const user = createUserMessage('hi');
  journal.append('turn/start', { turn });
  journal.append('user/message', { turn, message: user });
  journal.append('step/start', { turn, step });
  const prepared = await harness.llm.prepareCall({ provider, model, ...(provider.startsWith('bench-anthropic') ? { reasoningEffort: 'low' } : {}) });
  await journal.checkpoint(); // before the call is dispatched
  const controller = new AbortController();
  const request = markAgentLoopRequest({ ...prepared.config, messages: journal.state.messages, tools: TOOLS, signal: controller.signal, sessionId: id, purpose: 'agent' });
  const assembler = new BlockAssembler();
  let items = 0;
  for await (const chunk of prepared.stream(request)) {
    items++;
    assembler.push(chunk);
    const appended = journal.append('assistant/chunk', { turn, step, chunk });
    if (appended instanceof Promise) await appended;
  }
  const result = assembler.result();
  if (result.finish.kind === 'stop' || result.finish.kind === 'tool-calls') {
    const message = createAssistantMessage({ content: result.content, provider, model, ...(result.replayState ? { replayState: result.replayState } : {}) });
    journal.append('assistant/message', { turn, step, message, finish: result.finish, ...(result.usage ? { usage: result.usage } : {}) });
  }
  journal.append('step/end', { turn, step });
  journal.append('turn/end', { turn, reason: 'completed' });
  await journal.checkpoint(); // at turn end
  await journal.close();
  const finish = result.finish.kind === 'error' || result.finish.kind === 'aborted' ? `${result.finish.kind}: ${result.finish.failure.code} ${result.finish.failure.message}` : result.finish.kind;
  return { items, blocks: result.content.length, finish };
}

/**
 * One turn of the whole agent loop (issue 22): `harness.createSession({ maxSteps: 1 })` and
 * `session.run('hi')` iterated to its end by the consumer — the loop's request hooks, the stream
 * (through the rig's `llm/stream` middlewares: none for `loop`, 3 for `loop-mw`), the assembler, one journal record per chunk with checkpoints, every
 * event delivered to the consumer, the `assistant/message`, and the tool calls of the message
 * journaled, approved ({@link allowAll}), run ({@link BENCH_TOOLS}: a checkpoint before each body)
 * and answered, then `MAX_STEPS_EXCEEDED` ends the turn instead of a second model call.
 */
async function loopTurn(rig: HarnessRig, provider: string, model: string): Promise<Consumed> {
  const session = await rig.harness.createSession({ maxSteps: 1 });
  let items = 0;
  let blocks = 0;
  let finish = 'none';
  let toolFailure: string | undefined;
  try {
    for await (const event of session.run('hi', { provider, model, approve: allowAll, ...(provider.startsWith('bench-anthropic') ? { reasoningEffort: 'low' } : {}) })) {
      items++;
      if (event.type === 'assistant/message') {
        const data = event.data as { message: { content: readonly unknown[] }; finish: { kind: string } };
        blocks = data.message.content.length;
        finish = data.finish.kind;
      } else if (event.type === 'tool/result') {
        // The real path: a tool that did not run (unknown, denied, failed) is a broken bench.
        const code = (event.data as { code?: string }).code;
        if (code !== undefined) toolFailure ??= `error: tool/result ${code}`;
      } else if (event.type === 'turn/end' && finish === 'none') {
        const data = event.data as { reason: string; failure?: { code: string; message: string } };
        finish = `error: ${data.reason} ${data.failure?.code ?? ''} ${data.failure?.message ?? ''}`;
      }
    }
  } finally {
    await session.close();
  }
  return { items, blocks, finish: toolFailure ?? finish };
}

// ── (c) Vercel AI SDK ─────────────────────────────────────────────────────────────────────────────

/** The parts of the `ai` package this bench uses. */
interface AiModule {
  streamText(options: Record<string, unknown>): { fullStream: AsyncIterable<{ type: string; finishReason?: string; error?: unknown }> };
  jsonSchema(schema: unknown): unknown;
  tool(definition: Record<string, unknown>): unknown;
}
interface AiOpenAIModule {
  createOpenAI(options: Record<string, unknown>): { chat(model: string): unknown };
}
interface AiAnthropicModule {
  createAnthropic(options: Record<string, unknown>): (model: string) => unknown;
}

export async function vercelContender(served: Served): Promise<Partial<Record<StreamName, Consume>>> {
  const ai = await importPeer<AiModule>('ai');
  const { createOpenAI } = await importPeer<AiOpenAIModule>('@ai-sdk/openai');
  const { createAnthropic } = await importPeer<AiAnthropicModule>('@ai-sdk/anthropic');
  const openai = createOpenAI({ apiKey: KEY, baseURL: served.openai.url });
  const anthropic = createAnthropic({ apiKey: KEY, baseURL: `${served.anthropic.root}/v1` });
  const tools = Object.fromEntries(TOOLS.map((spec) => [spec.name, ai.tool({ description: spec.description, inputSchema: ai.jsonSchema(spec.inputSchema) })]));
  const consume = async (options: Record<string, unknown>): Promise<Consumed> => {
    const result = ai.streamText({ ...options, prompt: 'hi', maxRetries: 0 });
    let items = 0;
    let blocks = 0;
    let finish = 'none';
    for await (const part of result.fullStream) {
      items++;
      switch (part.type) {
        case 'tool-call':
        case 'text-end':
        case 'reasoning-end':
          blocks++;
          break;
        case 'finish':
          finish = String(part.finishReason);
          break;
        case 'error':
          finish = `error: ${part.error instanceof Error ? part.error.message : String(part.error)}`;
          break;
        default:
          break;
      }
    }
    return { items, blocks, finish };
  };
  return {
    openai: () => consume({ model: openai.chat(MODELS.openai), tools }),
    anthropic: () => consume({ model: anthropic(MODELS.anthropic), providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: 2048 } } } }),
  };
}

// ── (d) pi-ai ─────────────────────────────────────────────────────────────────────────────────────

interface PiModule {
  stream(
    model: unknown,
    context: unknown,
    options?: Record<string, unknown>,
  ): AsyncIterable<{ type: string; reason?: string; message?: { content: unknown[] }; error?: { errorMessage?: string; content: unknown[] } }>;
}

export async function piContender(served: Served): Promise<Partial<Record<StreamName, Consume>>> {
  const pi = await importPeer<PiModule>('@mariozechner/pi-ai');
  const base = { reasoning: true, input: ['text'], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 200_000, maxTokens: 8192 };
  const openaiModel = { ...base, id: MODELS.openai, name: 'bench openai', api: 'openai-completions', provider: 'openai', baseUrl: served.openai.url, reasoning: false };
  const anthropicModel = { ...base, id: MODELS.anthropic, name: 'bench anthropic', api: 'anthropic-messages', provider: 'anthropic', baseUrl: served.anthropic.root };
  const tools = TOOLS.map((spec) => ({ name: spec.name, description: spec.description, parameters: spec.inputSchema }));
  const consume = async (model: unknown, options: Record<string, unknown>): Promise<Consumed> => {
    const context = { messages: [{ role: 'user', content: 'hi', timestamp: Date.now() }], tools };
    let items = 0;
    let blocks = 0;
    let finish = 'none';
    for await (const event of pi.stream(model, context, { apiKey: KEY, maxRetries: 0, ...options })) {
      items++;
      if (event.type === 'done') {
        finish = String(event.reason);
        blocks = event.message?.content.length ?? -1;
      } else if (event.type === 'error') {
        finish = `error: ${event.error?.errorMessage ?? 'unknown'}`;
        blocks = event.error?.content.length ?? -1;
      }
    }
    return { items, blocks, finish };
  };
  return {
    openai: () => consume(openaiModel, {}),
    anthropic: () => consume(anthropicModel, { thinkingEnabled: true, thinkingBudgetTokens: 2048 }),
  };
}

// ── Consumer process ──────────────────────────────────────────────────────────────────────────────

export interface Sample extends Consumed {
  readonly cpuUs: number;
  readonly wallMs: number;
}

/** What one measurement batch reports. */
export interface Measured {
  /** The CPU runs, back to back after the warm-ups. */
  readonly samples: Sample[];
  /** Per heap run (each after a full GC): bytes allocated on the JS heap (GCProfiler: net growth + what each GC freed). */
  readonly heapSamples: number[];
  /** The first stream of the fresh process (the first warm-up): what a cold process pays. */
  readonly cold: Sample;
  /** Warm-up streams run before the CPU runs. */
  readonly warmupCount: number;
}

async function contenderFor(name: Contender, served: Served): Promise<{ consume: Partial<Record<StreamName, Consume>>; close(): Promise<void> }> {
  switch (name) {
    case 'raw':
      return { consume: await rawContender(served), close: async () => undefined };
    case 'floor':
      return floorContender(served);
    case 'harness': {
      const rig = await harnessRig(served);
      return { consume: rig.consume, close: () => rig.close() };
    }
    case 'loop':
    case 'loop-mw': {
      const rig = await harnessRig(served, name === 'loop' ? 0 : 3);
      return { consume: rig.loop, close: () => rig.close() };
    }
    case 'vercel':
      return { consume: await vercelContender(served), close: async () => undefined };
    case 'pi':
      return { consume: await piContender(served), close: async () => undefined };
  }
}

/**
 * `BENCH_STREAM_CPU_PROFILE=<dir>`: the CPU runs of each batch under the inspector's CPU profiler
 * (its default 1 ms sampling), written to `<dir>/<contender>-<stream>-<pid>.cpuprofile` — the
 * profile of the real thing, SDK and loopback included; read it with profile-summary.ts
 * (`--layers` splits it into the runtime, the plugins, the SDK and Node's HTTP stack). The
 * figures of a profiled run are the profiler's too: read them from a run without it. The file name
 * does not say the mode: profile one at a time (`BENCH_STREAM_MODES=paced`).
 */
async function startCpuProfile(): Promise<{ stop(label: string): Promise<void> } | undefined> {
  const dir = process.env.BENCH_STREAM_CPU_PROFILE;
  if (dir === undefined || dir === '') return undefined;
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop(label) {
      const { profile } = await session.post('Profiler.stop');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${label}-${process.pid}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/** One consumption, timed. */
async function timed(consume: Consume): Promise<Sample> {
  const wall = performance.now();
  const cpu = cpuMicros();
  const seen = await consume();
  const cpuUs = cpuMicros() - cpu;
  return { ...seen, cpuUs, wallMs: performance.now() - wall };
}

/**
 * Warm-up runs — at least `warmups` streams and `warmupEvents` SSE events (the first one timed:
 * `cold`); then `runs` CPU runs back to back (steady state: no forced GC in between); then
 * `heapRuns` heap runs, each after a full GC, with the GC profiler on. With `gcEachRun` (the
 * bench's earlier method) every CPU run also starts after a full GC.
 */
export async function measureContender(name: Contender, stream: StreamName, served: Served, warmups: number, runs: number, heapRuns = 1, gcEachRun = false, warmupEvents = 0): Promise<Measured> {
  const contender = await contenderFor(name, served);
  try {
    const consume = contender.consume[stream];
    if (consume === undefined) throw new Error(`${name} has no ${stream} stream`);
    const cold = await timed(consume);
    let warmupCount = 1;
    for (; warmupCount < warmups || warmupCount * served[stream].eventCount < warmupEvents; warmupCount++) await consume();
    const samples: Sample[] = [];
    const profiler = await startCpuProfile();
    for (let i = 0; i < runs; i++) {
      if (gcEachRun) collectGarbage();
      samples.push(await timed(consume));
    }
    await profiler?.stop(`${name}-${stream}`);
    const heapSamples: number[] = [];
    for (let i = 0; i < heapRuns; i++) {
      collectGarbage();
      const profiler = new GCProfiler();
      profiler.start();
      const heapBefore = getHeapStatistics().used_heap_size;
      await consume();
      const heapAfter = getHeapStatistics().used_heap_size;
      let freed = 0;
      for (const gc of profiler.stop()?.statistics ?? []) freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
      heapSamples.push(heapAfter - heapBefore + freed);
    }
    return { samples, heapSamples, cold, warmupCount };
  } finally {
    await contender.close();
  }
}

if (isMain(import.meta.url)) {
  const [name, stream, warmups, runs, servedJson, heapRuns, warmupEvents] = process.argv.slice(2);
  const measured = await measureContender(
    name as Contender,
    stream as StreamName,
    JSON.parse(servedJson!) as Served,
    Number(warmups),
    Number(runs),
    Number(heapRuns ?? 1),
    process.env.BENCH_STREAM_GC_EACH_RUN === '1',
    Number(warmupEvents ?? 0),
  );
  answer(measured);
  // Keep-alive sockets of the SDKs would hold the process open.
  process.exit(0);
}
