/**
 * BlockAssembler (seed 002 14.2): builds a message from stream chunks, incrementally.
 *
 * - A pure-delta stream (no block-start / block-end) assembles too.
 * - A delta to a closed block is ignored, as is a second close (the first close wins): a broken or
 *   hostile adapter cannot grow a block after it ended.
 * - Tool-call arguments stay raw JSON strings.
 * - One keep/drop decision for content and replay state: when the stream was cut (`max-tokens`,
 *   `error`, `aborted`), every tool-call block is dropped — its arguments may be truncated — and the
 *   envelope's `blocks` entries at the same positions go with them; the kept blocks keep theirs. An
 *   envelope whose entry count does not match the emitted blocks is dropped as a whole.
 * - An unclosed block of an unknown type throws `MALFORMED_RESPONSE`; a missing finish is `stop`.
 * - A chunk index that is not a small non-negative integer, or a block-end without a block, throws
 *   `MALFORMED_RESPONSE`.
 *
 * Blocks are ordered by chunk `index`. This is the hot path: one `push` per chunk, no copying; the
 * delta cases are kept in a small `push` (inlinable) with a one-slot cache for consecutive deltas.
 */
import { deepFreeze } from '../kernel/freeze.ts';
import { LlmError } from './errors.ts';
import type { ContentBlock, FinishReason, ReplayEnvelope, StreamChunk, TokenUsage } from './types.ts';

/** One block being assembled. A class, so that every slot has one shape (the hot path reads it per delta). */
class Slot {
  readonly type: string;
  /** The delta chunk type this slot still takes; `undefined` once closed (or for a type built only by block-end). */
  accepts: 'text-delta' | 'reasoning-delta' | 'tool-call-delta' | undefined;
  text = '';
  id: string | undefined = undefined;
  name: string | undefined = undefined;
  block: ContentBlock | undefined = undefined;

  constructor(type: string) {
    this.type = type;
    this.accepts = type === 'text' ? 'text-delta' : type === 'reasoning' ? 'reasoning-delta' : type === 'tool-call' ? 'tool-call-delta' : undefined;
  }
}

/** What {@link BlockAssembler.result} returns: content, finish reason, usage and the pruned replay state. */
export interface AssembledMessage {
  /** Content in index order, after the keep/drop decision. Frozen. */
  readonly content: readonly ContentBlock[];
  readonly finish: FinishReason;
  /** Field-wise merge of every usage chunk (a later value wins). Absent if none came. */
  readonly usage?: TokenUsage;
  /** The envelope pruned in lock-step with `content`; absent if none came or it did not align. */
  readonly replayState?: ReplayEnvelope;
  /** The envelope exactly as the finish chunk carried it (the journal keeps it on the chunk). */
  readonly fullReplayState?: ReplayEnvelope;
  /** How many tool-call blocks the keep/drop decision removed. */
  readonly droppedToolCallCount: number;
}

const STOP: FinishReason = Object.freeze({ kind: 'stop' });

/**
 * Builds one message from a model stream, chunk by chunk (seed 002 14.2; rules above): `push` each
 * chunk, then `result()`. Content and replay state stay in lock-step.
 * @throws LlmError `MALFORMED_RESPONSE` from `push` on a chunk that breaks the protocol.
 */
export class BlockAssembler {
  private readonly slots: Slot[] = [];
  /** The slot of the last chunk: consecutive deltas of one block skip the lookup. */
  private lastIndex = Number.NaN; // equal to no index
  private lastSlot: Slot | undefined;
  private usage: Record<string, number> | undefined;
  private finishChunk: Extract<StreamChunk, { type: 'finish' }> | undefined;

  /** True once a finish chunk arrived; later chunks are ignored. */
  get finished(): boolean {
    return this.finishChunk !== undefined;
  }

  push(chunk: StreamChunk): void {
    if (this.finishChunk !== undefined) return;
    // The deltas are almost every chunk: they stay in this small method (so that V8 can inline it
    // into the caller's loop); everything else goes to pushOther.
    const type = chunk.type;
    if (type === 'text-delta' || type === 'reasoning-delta') {
      const index = chunk.index;
      const slot = index === this.lastIndex ? this.lastSlot! : this.slot(index, type === 'text-delta' ? 'text' : 'reasoning');
      // A delta to a closed block, or of another kind than its block, is ignored.
      if (slot.accepts === type) slot.text += chunk.text;
    } else if (type === 'tool-call-delta') {
      const index = chunk.index;
      const slot = index === this.lastIndex ? this.lastSlot! : this.slot(index, 'tool-call');
      if (slot.accepts !== type) return;
      if (chunk.id && slot.id === undefined) slot.id = chunk.id;
      if (chunk.name && slot.name === undefined) slot.name = chunk.name;
      if (chunk.arguments) slot.text += chunk.arguments;
    } else {
      this.pushOther(chunk);
    }
  }

  private pushOther(chunk: StreamChunk): void {
    switch (chunk.type) {
      case 'block-start': {
        const slot = this.slot(chunk.index, chunk.blockType);
        if (chunk.id && slot.id === undefined) slot.id = chunk.id;
        if (chunk.name && slot.name === undefined) slot.name = chunk.name;
        return;
      }
      case 'block-end': {
        const block = chunk.block as ContentBlock | null | undefined;
        if (typeof block !== 'object' || block === null || typeof block.type !== 'string') {
          throw new LlmError('MALFORMED_RESPONSE', `block-end for index ${chunk.index} carries no content block.`);
        }
        const slot = this.slot(chunk.index, block.type);
        if (slot.block !== undefined) return; // the first close wins
        slot.block = chunk.block;
        slot.accepts = undefined;
        return;
      }
      case 'usage': {
        const merged = this.usage ?? (this.usage = {});
        for (const key in chunk.usage) {
          const value = (chunk.usage as Record<string, number | undefined>)[key];
          if (value !== undefined) merged[key] = value;
        }
        return;
      }
      case 'finish':
        this.finishChunk = chunk;
        return;
      default:
        return; // chunk kinds added by plugins carry no content
    }
  }

  /** The assembled message, as of now (call after the stream ended). */
  result(): AssembledMessage {
    const finish = this.finishChunk?.finish ?? STOP;
    const emitted = this.blocks(true);
    const cut = finish.kind === 'max-tokens' || finish.kind === 'error' || finish.kind === 'aborted';
    const full = this.finishChunk?.replayState;
    let content: ContentBlock[] = emitted;
    let replayState: ReplayEnvelope | undefined = full;
    let droppedToolCallCount = 0;
    if (full?.blocks !== undefined && full.blocks.length !== emitted.length) replayState = undefined;
    if (cut) {
      content = [];
      const keptEntries: unknown[] = [];
      for (let i = 0; i < emitted.length; i++) {
        if (emitted[i]!.type === 'tool-call') {
          droppedToolCallCount++;
          continue;
        }
        content.push(emitted[i]!);
        if (replayState?.blocks !== undefined) keptEntries.push(replayState.blocks[i]);
      }
      if (droppedToolCallCount > 0 && replayState?.blocks !== undefined) replayState = { response: replayState.response, blocks: keptEntries };
    }
    return deepFreeze({
      content,
      finish,
      ...(this.usage ? { usage: { ...this.usage } } : {}),
      ...(replayState ? { replayState } : {}),
      ...(full ? { fullReplayState: full } : {}),
      droppedToolCallCount,
    });
  }

  /**
   * What survives a cancelled stream: the non-empty text and reasoning seen so far, in order, and
   * no tool calls (their arguments may be incomplete). No replay state: it describes a whole response.
   */
  interruptedBlocks(): readonly ContentBlock[] {
    const kept: ContentBlock[] = [];
    for (const block of this.blocks(false)) {
      if ((block.type === 'text' || block.type === 'reasoning') && block.text.length > 0) kept.push(block);
    }
    return deepFreeze(kept);
  }

  private slot(index: number, type: string): Slot {
    let slot = this.slots[index];
    if (slot === undefined) {
      if (!Number.isInteger(index) || index < 0 || index > 0xffff) {
        throw new LlmError('MALFORMED_RESPONSE', `Stream chunk index ${index} is not a small non-negative integer.`);
      }
      slot = new Slot(type);
      this.slots[index] = slot;
    }
    this.lastIndex = index;
    this.lastSlot = slot;
    return slot;
  }

  /** Blocks in index order; `strict` throws on an unclosed block of unknown type, otherwise skips it. */
  private blocks(strict: boolean): ContentBlock[] {
    const out: ContentBlock[] = [];
    for (let index = 0; index < this.slots.length; index++) {
      const slot = this.slots[index];
      if (slot === undefined) continue;
      if (slot.block !== undefined) {
        out.push(slot.block);
        continue;
      }
      switch (slot.type) {
        case 'text':
          out.push({ type: 'text', text: slot.text });
          break;
        case 'reasoning':
          out.push({ type: 'reasoning', text: slot.text });
          break;
        case 'tool-call':
          out.push({ type: 'tool-call', id: slot.id ?? '', name: slot.name ?? '', arguments: slot.text });
          break;
        default:
          if (strict) {
            throw new LlmError('MALFORMED_RESPONSE', `Block ${index} of type "${slot.type}" never closed, and the assembler cannot build a "${slot.type}" block from deltas.`);
          }
      }
    }
    return out;
  }
}

/** Assembles a whole chunk list at once. */
export function assembleChunks(chunks: Iterable<StreamChunk>): AssembledMessage {
  const assembler = new BlockAssembler();
  for (const chunk of chunks) assembler.push(chunk);
  return assembler.result();
}
