/**
 * Anthropic Messages adapter (kind `anthropic`, replay version 1), through `@anthropic-ai/sdk`
 * (`messages.create({ stream: true })`, raw events, retries off).
 *
 * Stream → chunks (decisions where SOURCES.md leaves a choice):
 * - Each content block → one block, in order: `text` → text; `thinking` → reasoning (empty
 *   `thinking_delta`s are skipped; the `signature_delta` goes into the envelope entry
 *   `{ signature }`); `redacted_thinking` → `{ type: 'reasoning', text: '', redacted: true }` with entry
 *   `{ data }` (kept verbatim); `tool_use` → tool-call (`input_json_delta` fragments as raw arguments,
 *   `{}` when the input was empty — or the start block's `input` when no delta came — sent as a
 *   delta: `block-end` carries no content, per `StreamChunkMap`). Block types
 *   this adapter does not model (server tools, citations, …) are skipped; `ping` is ignored.
 * - A block without `content_block_stop`: text/thinking are closed at the end of the stream; a
 *   tool_use is left open (its input JSON may be cut) and gets no `block-end` — with
 *   `stop_reason: max_tokens` the assembler then drops it.
 * - Finish from `message_delta.stop_reason` (`message_stop` is not required: a last frame without
 *   its blank line is dropped by the SDK): `end_turn`, `stop_sequence`, `pause_turn` → stop;
 *   `tool_use` → tool-calls; `max_tokens` and `model_context_window_exceeded` → max-tokens;
 *   `refusal` → error `CONTENT_FILTER` (content streamed so far is kept). No stop_reason before the
 *   body ends → error `TRANSPORT`. An empty `end_turn` is a plain stop (Claude may answer nothing
 *   after a tool result); no `EMPTY_RESPONSE` rule here.
 * - An `event: error` after HTTP 200 (e.g. `overloaded_error`): the SDK throws an `APIError` without
 *   status; mapped by its type (`overloaded_error` → `SERVER`, retryable); the partial text and
 *   reasoning stay, no tool call is kept. See transport.ts for all error codes.
 * - Usage: `message_start.usage`, then every field `message_delta.usage` gives wins (the later
 *   count). `inputTokens` = `input_tokens` (Anthropic already excludes cache reads and writes);
 *   `cacheReadTokens` = `cache_read_input_tokens`; `cacheWriteTokens` = `cache_creation_input_tokens`;
 *   `outputTokens` = `output_tokens` (thinking included); `reasoningTokens` =
 *   `output_tokens_details.reasoning_tokens` when reported. Absent/null counts stay absent.
 *
 * Replay envelope: `{ response: { kind: 'anthropic', version: 1, id?, model?, stopReason?,
 * stopSequence? }, blocks: [{ signature } | { data } | null, …] }`.
 *
 * Request (decisions): `system` plus any system-role history (joined by a blank line) → `system`;
 * consecutive messages of one role are merged (tool results first in a user turn); user text, images
 * (`base64` or `url` source) and PDFs/plain-text files (`document`); tool results → `tool_result`
 * (text and image parts, `is_error`); an assistant turn → `thinking` (text + signature) and
 * `redacted_thinking` (data) blocks ONLY when the message still carries this adapter's replay state
 * (same provider and kind) — otherwise its reasoning is left out — then `text` and `tool_use` (input
 * parsed from the raw arguments; unparseable or non-object arguments are sent as `{}`). Empty text
 * blocks and empty messages are left out. `max_tokens` = `maxTokens`, else the model's
 * `maxOutputTokens`, else 8192. `reasoningEffort` → thinking per the model's `thinking` mode (see
 * config.ts); the budget is clamped below `max_tokens`, and thinking is left off when `max_tokens`
 * leaves no room for the 1024-token minimum; `temperature` is omitted while thinking is on and for
 * adaptive-thinking models, which may think unasked (Anthropic rejects it with thinking); `stop` →
 * `stop_sequences`; tools → `{ name, description, input_schema }` as given.
 */
import type Anthropic from '@anthropic-ai/sdk';
import {
  LlmError,
  RoutedSdkAdapter,
  type AssistantMessage,
  type ContentBlock,
  type GenerateOptions,
  type LlmFailure,
  type Message,
  type ReplayEnvelope,
  type StreamChunk,
  type StreamParser,
  type TokenUsage,
  type ToolResultBlock,
} from '../../runtime/index.ts';
import type { AnthropicModel, AnthropicRoute } from './config.ts';
import { createAnthropicClient, pumpStream } from './transport.ts';

export const ANTHROPIC_REPLAY_FORMAT = Object.freeze({ kind: 'anthropic', version: 1 });

/** Envelope entry of a thinking block. */
export interface ThinkingEntry {
  readonly signature: string;
}
/** Envelope entry of a redacted_thinking block. */
export interface RedactedEntry {
  readonly data: string;
}

const DEFAULT_BUDGETS: Record<string, number> = { minimal: 1024, low: 2048, medium: 8192, high: 24_576, max: 32_000 };
const DEFAULT_MAX_TOKENS = 8192;
/** block-end of a redacted_thinking block: its only attribute (the deltas carry no text). */
const REDACTED_ATTRIBUTES: ContentBlock = Object.freeze({ type: 'reasoning', text: '', redacted: true });

export class AnthropicAdapter extends RoutedSdkAdapter<AnthropicRoute, Anthropic> {
  override readonly replayFormat = ANTHROPIC_REPLAY_FORMAT;
  protected readonly kind = 'anthropic';

  constructor(routes: readonly AnthropicRoute[]) {
    super(routes, createAnthropicClient);
  }

  /**
   * Streams one Messages call; failures are thrown as `LlmError` or yielded as `finish{error}`.
   * @throws LlmError `AUTH` (no key), `NO_ADAPTER` (unknown route) before any request.
   */
  stream(options: GenerateOptions): AsyncIterableIterator<StreamChunk> {
    const route = this.route(options.provider);
    const client = this.clients.get(route);
    const body = buildAnthropicRequest(route, options) as unknown as Anthropic.MessageCreateParamsStreaming;
    return pumpStream<AnthropicEvent>(route, options.signal, (signal) => client.messages.create(body, { signal }), new AnthropicStreamState(route.provider));
  }

  /** A thinking entry needs a string signature, a redacted one its string data. */
  override validateReplayState(envelope: ReplayEnvelope, message: AssistantMessage): string | undefined {
    if (envelope.blocks === undefined) return undefined;
    for (let i = 0; i < message.content.length; i++) {
      const block = message.content[i]!;
      const entry = envelope.blocks[i] as { signature?: unknown; data?: unknown } | null | undefined;
      if (block.type !== 'reasoning') {
        if (entry !== null && entry !== undefined) return `block ${i} (${block.type}) has an envelope entry, only reasoning blocks have one`;
        continue;
      }
      if (block.redacted === true) {
        if (typeof entry?.data !== 'string') return `redacted reasoning block ${i} has no data to send back`;
      } else if (entry !== null && entry !== undefined && typeof entry.signature !== 'string') {
        return `reasoning block ${i} has a signature that is not a string`;
      }
    }
    return undefined;
  }
}

// ── Stream parsing ─────────────────────────────────────────────────────────────────────────────

/** The fields of Messages stream events this adapter reads. */
interface AnthropicEvent {
  type: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: AnthropicUsage | null };
  content_block?: { type: string; id?: string; name?: string; text?: string; thinking?: string; signature?: string; data?: string; input?: unknown };
  delta?: { type?: string; text?: string; thinking?: string; signature?: string; partial_json?: string; stop_reason?: string | null; stop_sequence?: string | null };
  usage?: AnthropicUsage | null;
}

interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  output_tokens_details?: { reasoning_tokens?: number | null } | null;
}

const KIND_TEXT = 1;
const KIND_THINKING = 2;
const KIND_REDACTED = 3;
const KIND_TOOL = 4;

interface BlockSlot {
  kind: number;
  block: number;
  text: string;
  id: string;
  name: string;
  /** tool_use: the start block's input when no delta arrives. */
  input: unknown;
  closed: boolean;
}

export class AnthropicStreamState implements StreamParser<AnthropicEvent> {
  readonly out: StreamChunk[] = [];
  /** By the provider's block index; `null` for skipped block types. */
  private readonly slots: (BlockSlot | null)[] = [];
  private readonly entries: (ThinkingEntry | RedactedEntry | null)[] = [];
  private nextBlock = 0;
  private readonly usage: Record<string, number> = {};
  private usageSeen = false;
  private id: string | undefined;
  private model: string | undefined;
  private stopReason: string | undefined;
  private stopSequence: string | undefined;

  constructor(private readonly provider: string) {}

  push(event: AnthropicEvent): void {
    switch (event.type) {
      case 'content_block_delta': {
        const slot = this.slots[event.index ?? -1];
        const delta = event.delta;
        if (!slot || slot.closed || delta === undefined) return;
        switch (delta.type) {
          case 'text_delta':
            if (slot.kind === KIND_TEXT && delta.text) {
              slot.text += delta.text;
              this.out.push({ type: 'text-delta', index: slot.block, text: delta.text });
            }
            return;
          case 'thinking_delta':
            if (slot.kind === KIND_THINKING && delta.thinking) {
              slot.text += delta.thinking;
              this.out.push({ type: 'reasoning-delta', index: slot.block, text: delta.thinking });
            }
            return;
          case 'signature_delta':
            if (slot.kind === KIND_THINKING && delta.signature) slot.id += delta.signature;
            return;
          case 'input_json_delta':
            if (slot.kind === KIND_TOOL && delta.partial_json) {
              slot.text += delta.partial_json;
              this.out.push({ type: 'tool-call-delta', index: slot.block, arguments: delta.partial_json });
            }
            return;
          default:
            return; // citations_delta, …
        }
      }
      case 'content_block_start':
        this.start(event);
        return;
      case 'content_block_stop': {
        const slot = this.slots[event.index ?? -1];
        if (slot) this.close(slot);
        return;
      }
      case 'message_start': {
        const message = event.message;
        if (message?.id) this.id = message.id;
        if (message?.model) this.model = message.model;
        if (message?.usage) this.mergeUsage(message.usage);
        return;
      }
      case 'message_delta':
        if (event.delta?.stop_reason) this.stopReason = event.delta.stop_reason;
        if (event.delta?.stop_sequence) this.stopSequence = event.delta.stop_sequence;
        if (event.usage) this.mergeUsage(event.usage);
        return;
      default:
        return; // message_stop, ping, unknown
    }
  }

  private start(event: AnthropicEvent): void {
    const given = event.content_block;
    const providerIndex = event.index ?? this.slots.length;
    if (given === undefined || this.slots[providerIndex]) return;
    let kind: number;
    switch (given.type) {
      case 'text':
        kind = KIND_TEXT;
        break;
      case 'thinking':
        kind = KIND_THINKING;
        break;
      case 'redacted_thinking':
        kind = KIND_REDACTED;
        break;
      case 'tool_use':
        kind = KIND_TOOL;
        break;
      default:
        this.slots[providerIndex] = null;
        return;
    }
    const index = this.nextBlock++;
    const slot: BlockSlot = { kind, block: index, text: '', id: '', name: '', input: undefined, closed: false };
    this.slots[providerIndex] = slot;
    if (kind === KIND_TOOL) {
      slot.id = given.id ?? '';
      slot.name = given.name ?? '';
      slot.input = given.input;
      this.entries[index] = null;
      this.out.push({ type: 'block-start', index, blockType: 'tool-call', id: slot.id, name: slot.name });
      return;
    }
    if (kind === KIND_REDACTED) {
      this.entries[index] = { data: given.data ?? '' };
      this.out.push({ type: 'block-start', index, blockType: 'reasoning' });
      return;
    }
    this.entries[index] = null;
    this.out.push({ type: 'block-start', index, blockType: kind === KIND_TEXT ? 'text' : 'reasoning' });
    const initial = kind === KIND_TEXT ? given.text : given.thinking;
    if (initial) {
      slot.text = initial;
      this.out.push(kind === KIND_TEXT ? { type: 'text-delta', index, text: initial } : { type: 'reasoning-delta', index, text: initial });
    }
    if (kind === KIND_THINKING && given.signature) slot.id = given.signature;
  }

  private close(slot: BlockSlot): void {
    if (slot.closed) return;
    slot.closed = true;
    switch (slot.kind) {
      case KIND_THINKING:
        this.entries[slot.block] = { signature: slot.id };
        break;
      case KIND_REDACTED:
        this.out.push({ type: 'block-end', index: slot.block, block: REDACTED_ATTRIBUTES });
        return;
      case KIND_TOOL: {
        // The deltas are the arguments (StreamChunkMap): the start block's input or `{}` go as one.
        let args = slot.text;
        if (args === '') {
          args = slot.input !== null && typeof slot.input === 'object' && Object.keys(slot.input).length > 0 ? JSON.stringify(slot.input) : '{}';
          slot.text = args;
          this.out.push({ type: 'tool-call-delta', index: slot.block, arguments: args });
        }
        break;
      }
      default:
        break;
    }
    this.out.push({ type: 'block-end', index: slot.block });
  }

  private mergeUsage(usage: AnthropicUsage): void {
    this.usageSeen = true;
    const set = (key: keyof TokenUsage, value: number | null | undefined) => {
      if (typeof value === 'number' && Number.isFinite(value)) this.usage[key] = value;
    };
    set('inputTokens', usage.input_tokens);
    set('outputTokens', usage.output_tokens);
    set('cacheReadTokens', usage.cache_read_input_tokens);
    set('cacheWriteTokens', usage.cache_creation_input_tokens);
    set('reasoningTokens', usage.output_tokens_details?.reasoning_tokens);
  }

  /** Closes what is left and appends usage and the finish. @throws LlmError `TRANSPORT` without a stop_reason. */
  finish(): void {
    const reason = this.stopReason;
    if (reason === undefined) {
      throw new LlmError('TRANSPORT', `The stream from provider "${this.provider}" ended before its stop_reason (the connection closed early).`, { details: { provider: this.provider } });
    }
    const cut = reason === 'max_tokens' || reason === 'model_context_window_exceeded' || reason === 'refusal';
    for (const slot of this.slots) {
      if (!slot || slot.closed) continue;
      if (slot.kind === KIND_TOOL && cut) continue; // incomplete input: no block-end
      this.close(slot);
    }
    if (this.usageSeen) this.out.push({ type: 'usage', usage: { ...this.usage } });
    switch (reason) {
      case 'tool_use':
        return this.succeed({ kind: 'tool-calls' });
      case 'max_tokens':
      case 'model_context_window_exceeded':
        return this.succeed({ kind: 'max-tokens' });
      case 'refusal':
        return this.fail(
          new LlmError('CONTENT_FILTER', `Provider "${this.provider}" stopped the response: the model refused (stop_reason "refusal").`, {
            details: { provider: this.provider, providerCode: reason },
          }).failure,
        );
      default:
        return this.succeed({ kind: 'stop' });
    }
  }

  private succeed(finish: { kind: 'stop' | 'tool-calls' | 'max-tokens' }): void {
    const response: Record<string, unknown> = { kind: 'anthropic', version: 1 };
    if (this.id !== undefined) response.id = this.id;
    if (this.model !== undefined) response.model = this.model;
    if (this.stopReason !== undefined) response.stopReason = this.stopReason;
    if (this.stopSequence !== undefined) response.stopSequence = this.stopSequence;
    this.out.push({ type: 'finish', finish, replayState: { response, blocks: this.entries.slice(0, this.nextBlock) } });
  }

  private fail(failure: LlmFailure): void {
    this.out.push({ type: 'finish', finish: { kind: 'error', failure } });
  }
}

// ── Request ────────────────────────────────────────────────────────────────────────────────────

type Json = Record<string, unknown>;

/** The Messages request body for a call (see the module docstring). */
export function buildAnthropicRequest(route: AnthropicRoute, options: GenerateOptions): Json {
  const model = route.modelsById.get(options.model);
  const systemParts: string[] = [];
  if (options.system !== undefined && options.system !== '') systemParts.push(options.system);
  const messages = buildMessages(route, options, model, systemParts);
  const maxTokens = options.maxTokens ?? model?.maxOutputTokens ?? DEFAULT_MAX_TOKENS;
  const body: Json = { model: options.model, max_tokens: maxTokens, messages, stream: true };
  if (systemParts.length > 0) body.system = systemParts.join('\n\n');
  if (options.tools !== undefined && options.tools.length > 0) {
    body.tools = options.tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.inputSchema }));
  }
  let thinkingOn = false;
  const effort = options.reasoningEffort;
  if (effort !== undefined) {
    if (effort === 'off' || effort === 'none') body.thinking = { type: 'disabled' };
    else if (model?.thinking === 'adaptive') {
      body.thinking = { type: 'adaptive' };
      body.output_config = { effort };
      thinkingOn = true;
    } else {
      let budget = model?.thinkingBudgets?.[effort] ?? DEFAULT_BUDGETS[effort] ?? DEFAULT_BUDGETS.medium!;
      if (budget >= maxTokens) budget = maxTokens - 1;
      if (budget >= 1024) {
        body.thinking = { type: 'enabled', budget_tokens: budget };
        thinkingOn = true;
      }
    }
  }
  if (options.temperature !== undefined && !thinkingOn && model?.thinking !== 'adaptive') body.temperature = options.temperature;
  if (options.stop !== undefined && options.stop.length > 0) body.stop_sequences = [...options.stop];
  return body;
}

function buildMessages(_route: AnthropicRoute, options: GenerateOptions, model: AnthropicModel | undefined, systemParts: string[]): Json[] {
  const out: { role: 'user' | 'assistant'; content: Json[] }[] = [];
  const modalities = model?.inputModalities;
  const images = modalities === undefined || modalities.includes('image');
  const files = modalities === undefined || modalities.includes('file');
  const append = (role: 'user' | 'assistant', content: Json[]) => {
    if (content.length === 0) return;
    const last = out.at(-1);
    if (last !== undefined && last.role === role) last.content.push(...content);
    else out.push({ role, content });
  };
  for (const message of options.messages) {
    if (message.role === 'system') {
      const text = plainText(message.content);
      if (text !== '') systemParts.push(text);
      continue;
    }
    if (message.role === 'assistant') {
      append('assistant', assistantContent(options, message));
      continue;
    }
    append('user', userContent(message.content, images, files));
  }
  // Tool results must open their user turn.
  for (const message of out) {
    if (message.role !== 'user' || message.content.length < 2) continue;
    const results = message.content.filter((block) => block.type === 'tool_result');
    if (results.length === 0 || results.length === message.content.length) continue;
    message.content = [...results, ...message.content.filter((block) => block.type !== 'tool_result')];
  }
  return out;
}

function assistantContent(options: GenerateOptions, message: Message): Json[] {
  const source = message.source;
  // Signatures are per model: the seam already drops state of another route or model; checked here too.
  const replay = source.kind === 'model' && source.provider === options.provider && source.model === options.model ? source.replayState : undefined;
  const entries = replay?.blocks;
  const content: Json[] = [];
  const blocks = message.content;
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i]!;
    if (block.type === 'reasoning') {
      if (replay === undefined) continue;
      const entry = entries?.[i] as Partial<ThinkingEntry & RedactedEntry> | null | undefined;
      if (block.redacted === true) {
        if (typeof entry?.data === 'string') content.push({ type: 'redacted_thinking', data: entry.data });
      } else if (typeof entry?.signature === 'string' && entry.signature !== '') {
        content.push({ type: 'thinking', thinking: block.text, signature: entry.signature });
      }
    } else if (block.type === 'text') {
      if (block.text !== '') content.push({ type: 'text', text: block.text });
    } else if (block.type === 'tool-call') {
      content.push({ type: 'tool_use', id: block.id, name: block.name, input: parseInput(block.arguments) });
    }
  }
  return content;
}

function parseInput(text: string): unknown {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

function userContent(blocks: readonly ContentBlock[], images: boolean, files: boolean): Json[] {
  const content: Json[] = [];
  for (const block of blocks) {
    switch (block.type) {
      case 'text':
        if (block.text !== '') content.push({ type: 'text', text: block.text });
        break;
      case 'image':
        content.push(images ? imageBlock(block) : { type: 'text', text: omitted('image', block.mediaType) });
        break;
      case 'file':
        content.push(files ? documentBlock(block) : { type: 'text', text: omitted('file', block.mediaType) });
        break;
      case 'tool-result':
        content.push(toolResult(block, images));
        break;
      default:
        break;
    }
  }
  return content;
}

function toolResult(block: ToolResultBlock, images: boolean): Json {
  const parts: Json[] = [];
  for (const part of block.content) {
    if (part.type === 'text') {
      if (part.text !== '') parts.push({ type: 'text', text: part.text });
    } else parts.push(images ? imageBlock(part) : { type: 'text', text: omitted('image', part.mediaType) });
  }
  const result: Json = { type: 'tool_result', tool_use_id: block.toolCallId };
  if (parts.length === 1 && parts[0]!.type === 'text') result.content = parts[0]!.text;
  else if (parts.length > 0) result.content = parts;
  if (block.isError) result.is_error = true;
  return result;
}

function imageBlock(block: { mediaType: string; data?: string; url?: string }): Json {
  if (block.data !== undefined) return { type: 'image', source: { type: 'base64', media_type: block.mediaType, data: block.data } };
  return { type: 'image', source: { type: 'url', url: block.url } };
}

function documentBlock(block: { mediaType: string; data?: string; url?: string; name?: string }): Json {
  const title = block.name !== undefined ? { title: block.name } : {};
  if (block.mediaType === 'application/pdf') {
    if (block.data !== undefined) return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: block.data }, ...title };
    return { type: 'document', source: { type: 'url', url: block.url }, ...title };
  }
  if (block.mediaType.startsWith('text/') && block.data !== undefined) {
    return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: Buffer.from(block.data, 'base64').toString('utf8') }, ...title };
  }
  return { type: 'text', text: omitted('file', block.mediaType) };
}

function omitted(kind: 'image' | 'file', mediaType: string): string {
  return `[${kind} omitted: the model does not accept ${kind === 'image' ? 'images' : 'this file type'} (${mediaType})]`;
}

function plainText(blocks: readonly ContentBlock[]): string {
  let text = '';
  for (const block of blocks) if (block.type === 'text') text += block.text;
  return text;
}
