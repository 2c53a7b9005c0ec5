/**
 * OpenAI Responses adapter (kind `openai-responses`, replay version 1): api.openai.com `/responses` and
 * compatible endpoints (OpenRouter, Bedrock), through the `openai` SDK (`stream: true`, retries off).
 *
 * Stream → chunks (decisions where SOURCES.md leaves a choice):
 * - Output items are correlated by `output_index` (never by arrival order). A block opens when its
 *   item (reasoning, function_call) or content part (output_text, refusal) is first seen, so block
 *   indexes follow the output order; a block ends at its item's `output_item.done`, which may come
 *   late (OpenRouter finishes the reasoning item after the message).
 * - A reasoning item → one reasoning block whose text is its summary parts (joined by a blank line)
 *   or its `reasoning_text` content (raw chain of thought); an item with only `encrypted_content`
 *   gives a reasoning block with empty text. Its envelope entry keeps the item `id`, the
 *   `encrypted_content` of `output_item.done` (it wins over the `.added` value) and which field the
 *   text came from. Text never streamed as deltas is taken from the `.done` item.
 * - A message item → one text block per `output_text` part (refusal parts → text with `refusal:
 *   true`); entry `{ id: <message item id>, phase? }`. A function_call item → a tool-call block with
 *   id = `call_id` (ids such as `call_1` are only unique within one response), arguments from the
 *   deltas (or the `.done` item), `{}` when empty; entry `{ id: <item id> }`. Other item types are
 *   ignored.
 * - Finish: `response.completed` → tool-calls when a function call was made, else stop (no text and
 *   no tool call → error `EMPTY_RESPONSE`); `response.incomplete` → max-tokens
 *   (`max_output_tokens` or any other reason; `content_filter` → error `CONTENT_FILTER`);
 *   `response.failed` → error mapped from `response.error.code`; an `error` event → the SDK throws,
 *   mapped from its code (`insufficient_quota` → `QUOTA_EXCEEDED`); no terminal event → `TRANSPORT`.
 *   A function call without its `output_item.done` gets no `block-end`.
 * - Usage from the terminal response: `inputTokens` = `input_tokens − cached_tokens −
 *   cache_write_tokens`; `cacheReadTokens` = `input_tokens_details.cached_tokens`;
 *   `cacheWriteTokens` = `input_tokens_details.cache_write_tokens` (Bedrock); `outputTokens` =
 *   `output_tokens` (reasoning included); `reasoningTokens` = `output_tokens_details.reasoning_tokens`.
 *
 * Replay envelope: `{ response: { kind: 'openai-responses', version: 1, id?, status?, model?,
 * incompleteReason? }, blocks: [ReasoningEntry | TextEntry | ToolEntry | null, …] }`.
 *
 * Request (decisions): `system` → `instructions`; system-role history → `system` input messages;
 * user text/images/files → `input_text` / `input_image` (data URL or URL) / `input_file`; an assistant
 * turn WITH this adapter's replay state → its items verbatim: reasoning items (`id`, summary or
 * content text, `encrypted_content`), message items (`id`, `output_text` / `refusal` parts) and
 * function_call items (`id`, `call_id`, `name`, `arguments`); WITHOUT it (another provider or kind:
 * the seam dropped it) → reasoning is left out, text as a plain assistant message, tool calls as
 * function_call items without item ids. Tool results → `function_call_output` (a string, or a list
 * with `input_image` parts). `reasoningEffort` → `reasoning: { effort, summary }`; for a model that
 * reasons (its catalog entry lists efforts, or an effort is set) `include:
 * ['reasoning.encrypted_content']`; `store` per route (default false); `maxTokens` →
 * `max_output_tokens`; `temperature` passed through; `stop` is not supported by the Responses API
 * (`UNSUPPORTED`); tools → `{ type: 'function', name, description, parameters, strict: false }`.
 */
import type OpenAI from 'openai';
import {
  LlmError,
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
import type { OpenAIRoute } from './config.ts';
import { acceptsModality, contentFilterError, emptyResponseError, mediaUrl, missingFinishError, omittedMedia, OpenAIAdapterBase } from './shared.ts';
import { classifyProviderError, pumpStream } from './transport.ts';

/** block-end of a refusal part: its only attribute (the deltas were the text). */
const REFUSAL_ATTRIBUTES: ContentBlock = Object.freeze({ type: 'text', text: '', refusal: true });

export const RESPONSES_REPLAY_FORMAT = Object.freeze({ kind: 'openai-responses', version: 1 });

/** Envelope entry of a reasoning block. */
export interface ResponsesReasoningEntry {
  readonly type: 'reasoning';
  readonly id: string;
  readonly encryptedContent?: string;
  /** Where the visible text came from: the summary parts or the raw `reasoning_text` content. */
  readonly source: 'summary' | 'content';
}
/** Envelope entry of a text block: its message item. */
export interface ResponsesTextEntry {
  readonly type: 'message';
  readonly id: string;
  readonly phase?: string;
}
/** Envelope entry of a tool-call block: its function_call item id. */
export interface ResponsesToolEntry {
  readonly type: 'function_call';
  readonly id: string;
}
export type ResponsesEntry = ResponsesReasoningEntry | ResponsesTextEntry | ResponsesToolEntry;

export class OpenAIResponsesAdapter extends OpenAIAdapterBase {
  override readonly replayFormat = RESPONSES_REPLAY_FORMAT;
  protected readonly kind = 'openai-responses';

  /**
   * Streams one Responses call; failures are thrown as `LlmError` or yielded as `finish{error}`.
   * @throws LlmError `UNSUPPORTED` (stop sequences), `AUTH` (no key) before any request.
   */
  stream(options: GenerateOptions): AsyncIterableIterator<StreamChunk> {
    const route = this.route(options.provider);
    if (options.stop !== undefined && options.stop.length > 0) {
      throw new LlmError('UNSUPPORTED', `Provider "${route.provider}" uses the Responses API, which takes no stop sequences; drop "stop" or route the model through api: 'chat'.`, {
        details: { provider: route.provider },
      });
    }
    const client = this.clients.get(route);
    const body = buildResponsesRequest(route, options) as unknown as OpenAI.Responses.ResponseCreateParamsStreaming;
    return pumpStream<ResponsesEvent>(route, options.signal, (signal) => client.responses.create(body, { signal }), new ResponsesStreamState(route.provider));
  }

  override validateReplayState(envelope: ReplayEnvelope, message: AssistantMessage): string | undefined {
    if (envelope.blocks === undefined) return undefined;
    for (let i = 0; i < message.content.length; i++) {
      const entry = envelope.blocks[i] as Partial<ResponsesReasoningEntry> | Partial<ResponsesTextEntry> | Partial<ResponsesToolEntry> | null | undefined;
      if (entry === null || entry === undefined) continue;
      const block = message.content[i]!;
      const expected = block.type === 'reasoning' ? 'reasoning' : block.type === 'text' ? 'message' : block.type === 'tool-call' ? 'function_call' : undefined;
      if (typeof entry !== 'object' || entry.type !== expected || typeof entry.id !== 'string') {
        return `block ${i} (${block.type}) has an envelope entry that does not describe a ${expected ?? block.type} item`;
      }
      if (
        entry.type === 'reasoning' &&
        (entry as Partial<ResponsesReasoningEntry>).encryptedContent !== undefined &&
        typeof (entry as Partial<ResponsesReasoningEntry>).encryptedContent !== 'string'
      ) {
        return `block ${i} has a non-string encrypted_content`;
      }
    }
    return undefined;
  }
}

// ── Stream parsing ─────────────────────────────────────────────────────────────────────────────

/** The fields of Responses stream events this adapter reads. */
interface ResponsesEvent {
  type: string;
  output_index?: number;
  content_index?: number;
  summary_index?: number;
  delta?: string;
  arguments?: string;
  item?: ResponsesItem;
  part?: { type?: string };
  response?: ResponsesResponse;
}

interface ResponsesItem {
  type: string;
  id?: string;
  call_id?: string;
  name?: string;
  arguments?: string;
  encrypted_content?: string | null;
  summary?: { text?: string }[];
  content?: { type?: string; text?: string; refusal?: string }[];
  phase?: string | null;
}

interface ResponsesResponse {
  id?: string;
  status?: string;
  model?: string;
  error?: { code?: string | null; message?: string | null } | null;
  incomplete_details?: { reason?: string | null } | null;
  usage?: ResponsesUsage | null;
}

interface ResponsesUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  input_tokens_details?: { cached_tokens?: number | null; cache_write_tokens?: number | null } | null;
  output_tokens_details?: { reasoning_tokens?: number | null } | null;
}

interface ItemSlot {
  kind: 'reasoning' | 'message' | 'function_call';
  id: string;
  /** reasoning / function_call: the block; message: unused (parts have their own). */
  block: number;
  text: string;
  /** reasoning: number of summary parts seen. */
  parts: number;
  source: 'summary' | 'content';
  encrypted: string | undefined;
  callId: string;
  name: string;
  /** message parts by content_index. */
  partBlocks: TextPart[] | undefined;
  phase: string | undefined;
  done: boolean;
}

interface TextPart {
  block: number;
  text: string;
  refusal: boolean;
  closed: boolean;
}

export class ResponsesStreamState implements StreamParser<ResponsesEvent> {
  readonly out: StreamChunk[] = [];
  private nextBlock = 0;
  private readonly items = new Map<number, ItemSlot>();
  private readonly entries: (ResponsesEntry | null)[] = [];
  private toolCount = 0;
  private textSeen = false;
  private terminal: { type: string; response: ResponsesResponse } | undefined;
  private responseId: string | undefined;
  private model: string | undefined;

  constructor(private readonly provider: string) {}

  push(event: ResponsesEvent): void {
    switch (event.type) {
      case 'response.output_text.delta':
      case 'response.refusal.delta': {
        const part = this.textPart(event.output_index ?? 0, event.content_index ?? 0, event.type === 'response.refusal.delta');
        const text = event.delta;
        if (part === undefined || typeof text !== 'string' || text === '' || part.closed) return;
        part.text += text;
        this.out.push({ type: 'text-delta', index: part.block, text });
        return;
      }
      case 'response.function_call_arguments.delta': {
        const slot = this.items.get(event.output_index ?? 0);
        const text = event.delta;
        if (slot === undefined || slot.kind !== 'function_call' || slot.done || typeof text !== 'string' || text === '') return;
        slot.text += text;
        this.out.push({ type: 'tool-call-delta', index: slot.block, arguments: text });
        return;
      }
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta': {
        const slot = this.items.get(event.output_index ?? 0);
        const text = event.delta;
        if (slot === undefined || slot.kind !== 'reasoning' || slot.done || typeof text !== 'string' || text === '') return;
        if (event.type === 'response.reasoning_text.delta') slot.source = 'content';
        this.reasoningDelta(slot, text);
        return;
      }
      case 'response.reasoning_summary_part.added': {
        const slot = this.items.get(event.output_index ?? 0);
        if (slot === undefined || slot.kind !== 'reasoning' || slot.done) return;
        if (slot.parts++ > 0 && slot.text !== '') this.reasoningDelta(slot, '\n\n');
        return;
      }
      case 'response.output_item.added':
        if (event.item !== undefined) this.slotFor(event.output_index ?? 0, event.item);
        return;
      case 'response.content_part.added': {
        const type = event.part?.type;
        if (type === 'output_text' || type === 'refusal') this.textPart(event.output_index ?? 0, event.content_index ?? 0, type === 'refusal');
        return;
      }
      case 'response.function_call_arguments.done': {
        const slot = this.items.get(event.output_index ?? 0);
        if (slot !== undefined && slot.kind === 'function_call' && !slot.done && slot.text === '' && typeof event.arguments === 'string' && event.arguments !== '') {
          slot.text = event.arguments;
          this.out.push({ type: 'tool-call-delta', index: slot.block, arguments: event.arguments });
        }
        return;
      }
      case 'response.output_item.done':
        if (event.item !== undefined) this.itemDone(event.output_index ?? 0, event.item);
        return;
      case 'response.created':
      case 'response.in_progress':
        if (event.response?.id !== undefined) this.responseId = event.response.id;
        if (event.response?.model !== undefined) this.model = event.response.model;
        return;
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed':
        if (event.response !== undefined) this.terminal = { type: event.type, response: event.response };
        return;
      default:
        return;
    }
  }

  private open(slot: ItemSlot, blockType: 'reasoning' | 'tool-call'): void {
    const index = this.nextBlock++;
    slot.block = index;
    if (blockType === 'tool-call') {
      this.toolCount++;
      this.entries[index] = { type: 'function_call', id: slot.id };
      this.out.push({ type: 'block-start', index, blockType, id: slot.callId, name: slot.name });
    } else {
      this.entries[index] = null; // set at output_item.done
      this.out.push({ type: 'block-start', index, blockType });
    }
  }

  private newSlot(kind: ItemSlot['kind'], item: ResponsesItem): ItemSlot {
    return {
      kind,
      id: item.id ?? '',
      block: -1,
      text: '',
      parts: 0,
      source: 'summary',
      encrypted: typeof item.encrypted_content === 'string' ? item.encrypted_content : undefined,
      callId: item.call_id ?? '',
      name: item.name ?? '',
      partBlocks: undefined,
      phase: typeof item.phase === 'string' ? item.phase : undefined,
      done: false,
    };
  }

  private slotFor(outputIndex: number, item: ResponsesItem): ItemSlot | undefined {
    const existing = this.items.get(outputIndex);
    if (existing !== undefined) return existing;
    let slot: ItemSlot;
    switch (item.type) {
      case 'reasoning':
        slot = this.newSlot('reasoning', item);
        this.items.set(outputIndex, slot);
        this.open(slot, 'reasoning');
        break;
      case 'function_call':
        slot = this.newSlot('function_call', item);
        this.items.set(outputIndex, slot);
        this.open(slot, 'tool-call');
        if (typeof item.arguments === 'string' && item.arguments !== '') {
          slot.text = item.arguments;
          this.out.push({ type: 'tool-call-delta', index: slot.block, arguments: item.arguments });
        }
        break;
      case 'message':
        slot = this.newSlot('message', item);
        slot.partBlocks = [];
        this.items.set(outputIndex, slot);
        break;
      default:
        return undefined;
    }
    return slot;
  }

  private textPart(outputIndex: number, contentIndex: number, refusal: boolean): TextPart | undefined {
    const slot = this.items.get(outputIndex) ?? this.slotFor(outputIndex, { type: 'message' });
    if (slot === undefined || slot.kind !== 'message') return undefined;
    const parts = slot.partBlocks!;
    let part = parts[contentIndex];
    if (part === undefined) {
      const index = this.nextBlock++;
      part = { block: index, text: '', refusal, closed: false };
      parts[contentIndex] = part;
      this.textSeen = true;
      this.entries[index] = slot.phase === undefined ? { type: 'message', id: slot.id } : { type: 'message', id: slot.id, phase: slot.phase };
      this.out.push({ type: 'block-start', index, blockType: 'text' });
    }
    return part;
  }

  private reasoningDelta(slot: ItemSlot, text: string): void {
    slot.text += text;
    this.out.push({ type: 'reasoning-delta', index: slot.block, text });
  }

  private itemDone(outputIndex: number, item: ResponsesItem): void {
    const slot = this.items.get(outputIndex) ?? this.slotFor(outputIndex, item);
    if (slot === undefined || slot.done) return;
    if (item.id !== undefined && item.id !== '') slot.id = item.id;
    switch (slot.kind) {
      case 'reasoning': {
        if (typeof item.encrypted_content === 'string') slot.encrypted = item.encrypted_content;
        if (slot.text === '') {
          const summary = (item.summary ?? []).map((part) => part.text ?? '').filter((text) => text !== '');
          const content = (item.content ?? []).filter((part) => part.type === 'reasoning_text').map((part) => part.text ?? '');
          if (summary.length > 0) this.reasoningDelta(slot, summary.join('\n\n'));
          else if (content.length > 0 && content.join('') !== '') {
            slot.source = 'content';
            this.reasoningDelta(slot, content.join(''));
          }
        }
        const entry: ResponsesReasoningEntry =
          slot.encrypted === undefined ? { type: 'reasoning', id: slot.id, source: slot.source } : { type: 'reasoning', id: slot.id, encryptedContent: slot.encrypted, source: slot.source };
        this.entries[slot.block] = entry;
        this.out.push({ type: 'block-end', index: slot.block });
        break;
      }
      case 'function_call': {
        if (item.call_id) slot.callId = item.call_id;
        if (item.name && slot.name === '') slot.name = item.name;
        if (slot.text === '' && typeof item.arguments === 'string' && item.arguments !== '') {
          slot.text = item.arguments;
          this.out.push({ type: 'tool-call-delta', index: slot.block, arguments: item.arguments });
        }
        if (slot.text === '') {
          slot.text = '{}';
          this.out.push({ type: 'tool-call-delta', index: slot.block, arguments: '{}' });
        }
        this.entries[slot.block] = { type: 'function_call', id: slot.id };
        // The call_id and name may only be known now: they ride on block-end as attributes.
        this.out.push({ type: 'block-end', index: slot.block, block: { type: 'tool-call', id: slot.callId, name: slot.name, arguments: '' } });
        break;
      }
      case 'message': {
        const parts = slot.partBlocks!;
        const content = item.content ?? [];
        for (let i = 0; i < content.length; i++) {
          const given = content[i]!;
          if (given.type !== 'output_text' && given.type !== 'refusal') continue;
          const full = given.type === 'refusal' ? (given.refusal ?? '') : (given.text ?? '');
          let part = parts[i];
          if (part === undefined) {
            if (full === '') continue;
            part = this.textPart(outputIndex, i, given.type === 'refusal')!;
          }
          if (part.text === '' && full !== '') {
            part.text = full;
            this.out.push({ type: 'text-delta', index: part.block, text: full });
          }
        }
        for (const part of parts) {
          if (part === undefined || part.closed) continue;
          part.closed = true;
          const entry = this.entries[part.block] as ResponsesTextEntry;
          if (entry.id !== slot.id) this.entries[part.block] = { ...entry, id: slot.id };
          this.out.push({ type: 'block-end', index: part.block, ...(part.refusal ? { block: REFUSAL_ATTRIBUTES } : {}) });
        }
        break;
      }
    }
    slot.done = true;
  }

  /** Closes what the terminal event leaves open and appends usage and the finish. @throws LlmError `TRANSPORT` without a terminal event. */
  finish(): void {
    const terminal = this.terminal;
    if (terminal === undefined) throw missingFinishError(this.provider);
    const response = terminal.response;
    // Items never finished: text and reasoning are closed as they are; function calls stay open (cut).
    for (const slot of this.items.values()) {
      if (slot.done) continue;
      if (slot.kind === 'reasoning') {
        this.entries[slot.block] =
          slot.encrypted === undefined ? { type: 'reasoning', id: slot.id, source: slot.source } : { type: 'reasoning', id: slot.id, encryptedContent: slot.encrypted, source: slot.source };
        this.out.push({ type: 'block-end', index: slot.block });
      } else if (slot.kind === 'message') {
        for (const part of slot.partBlocks!) {
          if (part === undefined || part.closed) continue;
          part.closed = true;
          this.out.push({ type: 'block-end', index: part.block, ...(part.refusal ? { block: REFUSAL_ATTRIBUTES } : {}) });
        }
      }
    }
    if (response.usage) this.out.push({ type: 'usage', usage: normalizeResponsesUsage(response.usage) });
    if (terminal.type === 'response.failed') {
      const providerCode = response.error?.code ?? undefined;
      const code = classifyProviderError({ providerCode: providerCode ?? undefined });
      const failure = new LlmError(code === 'UNKNOWN' && providerCode === undefined ? 'SERVER' : code, `Provider "${this.provider}" failed the response: ${response.error?.message ?? 'no message'}`, {
        details: { provider: this.provider, providerCode },
      }).failure;
      return this.fail(failure);
    }
    if (terminal.type === 'response.incomplete') {
      const reason = response.incomplete_details?.reason ?? undefined;
      if (reason === 'content_filter') return this.fail(contentFilterError(this.provider, reason).failure);
      return this.succeed({ kind: 'max-tokens' }, response);
    }
    if (this.toolCount > 0) return this.succeed({ kind: 'tool-calls' }, response);
    if (!this.textSeen) return this.fail(emptyResponseError(this.provider).failure);
    return this.succeed({ kind: 'stop' }, response);
  }

  private succeed(finish: { kind: 'stop' | 'tool-calls' | 'max-tokens' }, response: ResponsesResponse): void {
    const meta: Record<string, unknown> = { kind: 'openai-responses', version: 1 };
    const id = response.id ?? this.responseId;
    if (id !== undefined) meta.id = id;
    if (response.status !== undefined) meta.status = response.status;
    const model = response.model ?? this.model;
    if (model !== undefined) meta.model = model;
    const reason = response.incomplete_details?.reason;
    if (typeof reason === 'string') meta.incompleteReason = reason;
    this.out.push({ type: 'finish', finish, replayState: { response: meta, blocks: this.entries.slice(0, this.nextBlock) } });
  }

  private fail(failure: LlmFailure): void {
    this.out.push({ type: 'finish', finish: { kind: 'error', failure } });
  }
}

/** Responses usage → TokenUsage (see the module docstring). */
export function normalizeResponsesUsage(usage: ResponsesUsage): TokenUsage {
  const out: { -readonly [K in keyof TokenUsage]: TokenUsage[K] } = {};
  const input = num(usage.input_tokens);
  const cached = num(usage.input_tokens_details?.cached_tokens);
  const written = num(usage.input_tokens_details?.cache_write_tokens);
  if (input !== undefined) out.inputTokens = Math.max(0, input - (cached ?? 0) - (written ?? 0));
  if (cached !== undefined) out.cacheReadTokens = cached;
  if (written !== undefined) out.cacheWriteTokens = written;
  const output = num(usage.output_tokens);
  if (output !== undefined) out.outputTokens = output;
  const reasoning = num(usage.output_tokens_details?.reasoning_tokens);
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  return out;
}

function num(value: number | null | undefined): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

// ── Request ────────────────────────────────────────────────────────────────────────────────────

type Json = Record<string, unknown>;

/** The Responses request body for a call (see the module docstring). */
export function buildResponsesRequest(route: OpenAIRoute, options: GenerateOptions): Json {
  const body: Json = { model: options.model, input: buildResponsesInput(route, options), stream: true, store: route.store };
  if (options.system !== undefined && options.system !== '') body.instructions = options.system;
  if (options.tools !== undefined && options.tools.length > 0) {
    body.tools = options.tools.map((tool) => ({ type: 'function', name: tool.name, description: tool.description, parameters: tool.inputSchema, strict: false }));
  }
  const model = route.modelsById.get(options.model);
  const reasons = options.reasoningEffort !== undefined || (model?.reasoningEfforts?.length ?? 0) > 0;
  if (options.reasoningEffort !== undefined || (reasons && route.reasoningSummary !== 'none')) {
    const reasoning: Json = {};
    if (options.reasoningEffort !== undefined) reasoning.effort = options.reasoningEffort;
    if (route.reasoningSummary !== 'none') reasoning.summary = route.reasoningSummary;
    body.reasoning = reasoning;
  }
  if (reasons) body.include = ['reasoning.encrypted_content'];
  if (options.maxTokens !== undefined) body.max_output_tokens = options.maxTokens;
  if (options.temperature !== undefined) body.temperature = options.temperature;
  return body;
}

function buildResponsesInput(route: OpenAIRoute, options: GenerateOptions): Json[] {
  const out: Json[] = [];
  const images = acceptsModality(route, options, 'image');
  const files = acceptsModality(route, options, 'file');
  for (const message of options.messages) {
    if (message.role === 'assistant') {
      assistantItems(out, options, message);
      continue;
    }
    if (message.role === 'system') {
      out.push({ role: 'system', content: plainText(message.content) });
      continue;
    }
    const rest: ContentBlock[] = [];
    for (const block of message.content) {
      if (block.type === 'tool-result') out.push({ type: 'function_call_output', call_id: block.toolCallId, output: toolOutput(block, images) });
      else rest.push(block);
    }
    if (rest.length > 0) out.push({ role: 'user', content: userParts(rest, images, files) });
  }
  return out;
}

function assistantItems(out: Json[], options: GenerateOptions, message: Message): void {
  const source = message.source;
  const replay = source.kind === 'model' && source.provider === options.provider ? source.replayState : undefined;
  const entries = replay?.blocks;
  let openMessage: { id: string; content: Json[] } | undefined;
  let plain = '';
  const flushPlain = () => {
    if (plain !== '') out.push({ role: 'assistant', content: plain });
    plain = '';
  };
  const content = message.content;
  for (let i = 0; i < content.length; i++) {
    const block = content[i]!;
    const entry = entries?.[i] as ResponsesEntry | null | undefined;
    if (block.type === 'text') {
      if (entry?.type === 'message') {
        flushPlain();
        if (openMessage === undefined || openMessage.id !== entry.id) {
          const item: Json = { type: 'message', role: 'assistant', id: entry.id, status: 'completed', content: [] };
          if (entry.phase !== undefined) item.phase = entry.phase;
          openMessage = { id: entry.id, content: item.content as Json[] };
          out.push(item);
        }
        openMessage.content.push(block.refusal === true ? { type: 'refusal', refusal: block.text } : { type: 'output_text', text: block.text, annotations: [] });
      } else {
        openMessage = undefined;
        plain += block.text;
      }
      continue;
    }
    openMessage = undefined;
    flushPlain();
    if (block.type === 'reasoning') {
      if (entry?.type !== 'reasoning') continue; // no replay state: reasoning cannot be sent back
      // A reasoning item goes only with the item it leads to (OpenAI rejects it alone, e.g. after a
      // response cut in the middle of its function call).
      const following = content[i + 1];
      if (following === undefined || following.type === 'reasoning') continue;
      const item: Json = { type: 'reasoning', id: entry.id, summary: entry.source === 'summary' && block.text !== '' ? [{ type: 'summary_text', text: block.text }] : [] };
      if (entry.source === 'content' && block.text !== '') item.content = [{ type: 'reasoning_text', text: block.text }];
      if (entry.encryptedContent !== undefined) item.encrypted_content = entry.encryptedContent;
      out.push(item);
    } else if (block.type === 'tool-call') {
      const item: Json = { type: 'function_call', call_id: block.id, name: block.name, arguments: block.arguments };
      if (entry?.type === 'function_call') item.id = entry.id;
      out.push(item);
    }
  }
  flushPlain();
}

function userParts(blocks: readonly ContentBlock[], images: boolean, files: boolean): Json[] {
  const parts: Json[] = [];
  for (const block of blocks) {
    if (block.type === 'text') parts.push({ type: 'input_text', text: block.text });
    else if (block.type === 'image') parts.push(images ? { type: 'input_image', image_url: mediaUrl(block), detail: 'auto' } : { type: 'input_text', text: omittedMedia(block) });
    else if (block.type === 'file') {
      if (!files) parts.push({ type: 'input_text', text: omittedMedia(block) });
      else if (block.data !== undefined) parts.push({ type: 'input_file', file_data: mediaUrl(block), ...(block.name ? { filename: block.name } : {}) });
      else parts.push({ type: 'input_file', file_url: block.url });
    }
  }
  return parts;
}

function toolOutput(block: ToolResultBlock, images: boolean): string | Json[] {
  let hasImage = false;
  for (const part of block.content) if (part.type === 'image') hasImage = true;
  if (!hasImage || !images) {
    let text = '';
    for (const part of block.content) {
      const piece = part.type === 'text' ? part.text : omittedMedia(part);
      text = text === '' ? piece : `${text}\n${piece}`;
    }
    return text;
  }
  return block.content.map((part) => (part.type === 'text' ? { type: 'input_text', text: part.text } : { type: 'input_image', image_url: mediaUrl(part), detail: 'auto' }));
}

function plainText(blocks: readonly ContentBlock[]): string {
  let text = '';
  for (const block of blocks) if (block.type === 'text') text += block.text;
  return text;
}
