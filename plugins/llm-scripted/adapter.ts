/**
 * The scripted adapter: streams a script's reply the way a real provider does — reasoning, text and
 * tool calls split into fragments, usage, an optional pace between chunks — and honours the abort
 * signal between chunks. The deltas are each block's content and `block-end` carries none (the block
 * rule of `StreamChunkMap`), so a middleware that rewrites the deltas is not undone. Tool-call ids are derived from (turn, step, position), so a re-run of the
 * same conversation yields the same bytes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { HarnessError, LlmAdapter, LlmError, type GenerateOptions, type ModelInfo, type ProviderInfo, type ReplayDegradeReport, type StreamChunk, type TokenUsage } from '../../runtime/index.ts';
import { scriptContext, type ScriptFunction, type ScriptReply } from './script.ts';

export interface ScriptedAdapterOptions {
  readonly scripts: ReadonlyMap<string, ScriptFunction>;
  /** Delay between chunks, ms (default 0: as fast as possible). */
  readonly paceMs?: number;
  /** UTF-16 units per text / reasoning / arguments fragment (default 12; a positive integer), rounded up to a whole grapheme. */
  readonly fragmentChars?: number;
  /** The context window the models report, tokens (default 128,000). */
  readonly contextWindow?: number;
}

export class ScriptedAdapter extends LlmAdapter {
  override readonly replayFormat = { kind: 'scripted', version: 1 } as const;
  /** Replay-state degradations seen (for tests and `harness` diagnostics). */
  readonly degraded: ReplayDegradeReport[] = [];

  private readonly options: Required<ScriptedAdapterOptions>;

  /** @throws HarnessError `INVALID_CONFIG` when `fragmentChars` is not a positive integer or `paceMs` is negative. */
  constructor(options: ScriptedAdapterOptions) {
    super();
    this.options = { paceMs: 0, fragmentChars: 12, contextWindow: 128_000, ...options };
    // The deltas are the content (block-end carries none): a bad fragment size would lose it silently.
    if (!Number.isInteger(this.options.fragmentChars) || this.options.fragmentChars < 1) {
      throw new HarnessError('INVALID_CONFIG', `ScriptedAdapter: fragmentChars must be a positive integer, got ${String(options.fragmentChars)}.`);
    }
    if (!(this.options.paceMs >= 0)) throw new HarnessError('INVALID_CONFIG', `ScriptedAdapter: paceMs must be 0 or more, got ${String(options.paceMs)}.`);
  }

  providerInfo(provider: string): ProviderInfo {
    return { provider, kind: 'scripted', label: 'Scripted model (offline, deterministic)' };
  }

  listModels(): readonly ModelInfo[] {
    return [...this.options.scripts.keys()].map((id) => ({
      id,
      label: id === 'scripted-default' ? 'Built-in demo script: list, read, answer' : `Script ${id}`,
      contextWindow: this.options.contextWindow,
      maxOutputTokens: 8192,
      reasoningEfforts: ['low', 'medium', 'high'],
      inputModalities: ['text', 'image'],
    }));
  }

  onReplayDegrade(report: ReplayDegradeReport): void {
    this.degraded.push(report);
  }

  async *stream(options: GenerateOptions): AsyncGenerator<StreamChunk> {
    const script = this.options.scripts.get(options.model);
    if (script === undefined) throw new LlmError('UNKNOWN_MODEL', `The scripted provider has no script "${options.model}".`);
    const context = scriptContext(options.messages, options.tools ?? [], { system: options.system, model: options.model, purpose: options.purpose });
    const reply: ScriptReply = script(context);
    const signal = options.signal;
    const pace = async () => {
      if (this.options.paceMs > 0) await sleep(this.options.paceMs, undefined, { signal }).catch(() => undefined);
      if (signal?.aborted) throw new LlmError('ABORTED', 'The request was aborted.');
    };
    await pace();
    if (reply.error) {
      throw new LlmError(reply.error.code, reply.error.message, { details: reply.error.providerRetryAfterMs === undefined ? {} : { providerRetryAfterMs: reply.error.providerRetryAfterMs } });
    }
    const size = this.options.fragmentChars;
    let index = 0;
    let outputChars = 0;
    const blocks: null[] = [];
    if (reply.reasoning) {
      yield { type: 'block-start', index, blockType: 'reasoning' };
      for (const piece of fragments(reply.reasoning, size)) {
        await pace();
        yield { type: 'reasoning-delta', index, text: piece };
      }
      yield { type: 'block-end', index };
      outputChars += reply.reasoning.length;
      blocks.push(null);
      index++;
    }
    if (reply.text) {
      yield { type: 'block-start', index, blockType: 'text' };
      for (const piece of fragments(reply.text, size)) {
        await pace();
        yield { type: 'text-delta', index, text: piece };
      }
      yield { type: 'block-end', index };
      outputChars += reply.text.length;
      blocks.push(null);
      index++;
    }
    const truncated = reply.finish === 'max-tokens';
    for (const [position, call] of (reply.toolCalls ?? []).entries()) {
      const id = call.id ?? `call_s${context.turn}_${context.step}_${position}`;
      const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {});
      yield { type: 'block-start', index, blockType: 'tool-call', id, name: call.name };
      const pieces = fragments(args, size);
      // A max-tokens reply is cut in the middle of its last tool call's arguments.
      const sent = truncated && position === (reply.toolCalls?.length ?? 0) - 1 ? pieces.slice(0, Math.max(1, Math.floor(pieces.length / 2))) : pieces;
      for (const piece of sent) {
        await pace();
        yield { type: 'tool-call-delta', index, arguments: piece };
      }
      outputChars += args.length;
      if (sent === pieces) yield { type: 'block-end', index };
      blocks.push(null);
      index++;
    }
    yield { type: 'usage', usage: reply.usage ?? estimateUsage(options, outputChars, reply.reasoning?.length ?? 0) };
    const finish = reply.finish ?? (reply.toolCalls?.length ? 'tool-calls' : 'stop');
    yield {
      type: 'finish',
      finish: { kind: finish },
      replayState: { response: { kind: 'scripted', version: 1, model: options.model, turn: context.turn, step: context.step }, blocks },
    };
  }
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * The text in fragments of `size` UTF-16 units, each cut only between graphemes (a fragment may run
 * past `size` to finish one): a real provider never sends half an emoji or a base letter without its
 * accent, so neither does the scripted model. ASCII text is cut exactly every `size` characters.
 */
export function fragments(text: string, size: number): string[] {
  const out: string[] = [];
  let start = 0;
  while (text.length - start > size) {
    const cut = boundaryFrom(text, start + size);
    if (cut >= text.length) break;
    out.push(text.slice(start, cut));
    start = cut;
  }
  out.push(text.slice(start));
  return out;
}

/** Wider than any grapheme a text holds in practice (a ZWJ family emoji is 11 UTF-16 units). */
const GRAPHEME_WINDOW = 64;

/**
 * The first grapheme boundary at or after `cut`. Segments only a window around the cut: iterating
 * `Intl.Segmenter` over a whole long text is quadratic in V8 (a 240 KB reply took 70 s to cut).
 */
function boundaryFrom(text: string, cut: number): number {
  const from = Math.max(0, cut - GRAPHEME_WINDOW);
  const to = Math.min(text.length, cut + GRAPHEME_WINDOW);
  for (const { index } of graphemes.segment(text.slice(from, to))) if (from + index >= cut) return from + index;
  return to;
}

/** About four characters per token, as a real tokenizer averages on English text. */
function estimateUsage(options: GenerateOptions, outputChars: number, reasoningChars: number): TokenUsage {
  let inputChars = (options.system ?? '').length + JSON.stringify(options.tools ?? []).length;
  for (const message of options.messages) {
    for (const block of message.content) {
      if (block.type === 'text' || block.type === 'reasoning') inputChars += block.text.length;
      else if (block.type === 'tool-call') inputChars += block.arguments.length + block.name.length;
      else if (block.type === 'tool-result') for (const part of block.content) inputChars += part.type === 'text' ? part.text.length : 1000;
      else inputChars += 1000;
    }
  }
  return { inputTokens: Math.ceil(inputChars / 4), outputTokens: Math.ceil(outputChars / 4), reasoningTokens: Math.ceil(reasoningChars / 4) };
}
