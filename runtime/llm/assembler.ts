/**
 * BlockAssembler (seed 002 14.2): builds a message from stream chunks, incrementally, by the block
 * rule written on `StreamChunkMap`.
 *
 * - Text, reasoning and tool-call content is the concatenation of the block's deltas; a `block-end`
 *   gives such a block only its attributes (`refusal`, `redacted`, a tool call's id/name) — its
 *   text is not read, so a middleware's rewrite of the deltas is what the message holds. Only a
 *   block whose deltas carried no content at all is taken whole from its `block-end` (streams
 *   recorded that way: DeepSeek Harness journals). Other block types are their `block-end` block.
 * - A pure-delta stream (no block-start / block-end) assembles too.
 * - A delta to a closed block is ignored, as is a second close (the first close wins): a broken or
 *   hostile adapter cannot grow a block after it ended.
 * - Tool-call arguments stay raw JSON strings.
 * - Replay lock-step: an envelope whose entry count does not match the emitted blocks is dropped as
 *   a whole. A text or reasoning block whose assembled text no longer matches the digest the seam
 *   took of the adapter's output (`ReplayEnvelope.digests`: a middleware rewrote it) has its entry
 *   set to `null`; untouched blocks keep theirs as they are.
 * - One keep/drop decision for content and replay state: when the stream was cut (`max-tokens`,
 *   `error`, `aborted`), every tool-call block is dropped — its arguments may be truncated — and the
 *   envelope's entries at the same positions go with them; the kept blocks keep theirs, except a
 *   reasoning block right before a dropped call: reasoning and the item it leads to are one replay
 *   unit, so its entry becomes `null` (its text stays).
 * - An unclosed block of an unknown type throws `MALFORMED_RESPONSE`; a missing finish is `stop`.
 * - A chunk index that is not a small non-negative integer, a `block-end` whose `block` is not a
 *   content block, or one without a block for a block never opened, throws `MALFORMED_RESPONSE`.
 *
 * Blocks are ordered by chunk `index`. This is the hot path: one `push` per chunk, no copying; the
 * delta cases are kept in a small `push` (inlinable) with a one-slot cache for consecutive deltas.
 */
import { deepFreeze } from '../kernel/freeze.ts';
import { contentDigest } from './digest.ts';
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
  /** The block-end block: the block itself for types not built from deltas, attributes only for the others. */
  block: ContentBlock | undefined = undefined;
  ended = false;

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
        if (block === undefined) {
          const slot = this.slots[chunk.index];
          if (slot === undefined) throw new LlmError('MALFORMED_RESPONSE', `block-end for index ${chunk.index} closes no open block and carries no content block.`);
          slot.accepts = undefined;
          slot.ended = true;
          return;
        }
        if (typeof block !== 'object' || block === null || typeof block.type !== 'string') {
          throw new LlmError('MALFORMED_RESPONSE', `block-end for index ${chunk.index} carries a "block" that is not a content block.`);
        }
        const slot = this.slot(chunk.index, block.type);
        if (slot.ended) return; // the first close wins
        slot.block = block;
        slot.accepts = undefined;
        slot.ended = true;
        return;
      }
      case 'usage': {
        this.usage ??= {};
        const merged = this.usage;
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
    let entries = replayState?.blocks?.slice();
    let digests = replayState?.digests !== undefined && replayState.digests.length === emitted.length ? replayState.digests.slice() : undefined;
    let changed = false;
    if (entries !== undefined && digests !== undefined) {
      for (let i = 0; i < emitted.length; i++) {
        const digest = digests[i];
        const block = emitted[i]!;
        if (typeof digest !== 'string' || (block.type !== 'text' && block.type !== 'reasoning')) continue;
        if (contentDigest(block.text) === digest) continue;
        entries[i] = null; // rewritten after the adapter: its signed/encrypted state is not for this text
        digests[i] = null;
        changed = true;
      }
    }
    if (cut) {
      content = [];
      const keptEntries: unknown[] = [];
      const keptDigests: (string | null)[] = [];
      for (let i = 0; i < emitted.length; i++) {
        if (emitted[i]!.type === 'tool-call') {
          droppedToolCallCount++;
          // Reasoning and the item it leads to are one replay unit: never send it alone.
          if (entries !== undefined && content.length > 0 && content[content.length - 1]!.type === 'reasoning' && keptEntries[keptEntries.length - 1] !== null) {
            keptEntries[keptEntries.length - 1] = null;
            if (digests !== undefined) keptDigests[keptDigests.length - 1] = null;
          }
          continue;
        }
        content.push(emitted[i]!);
        if (entries !== undefined) keptEntries.push(entries[i]);
        if (digests !== undefined) keptDigests.push(digests[i] ?? null);
      }
      if (droppedToolCallCount > 0 && entries !== undefined) {
        entries = keptEntries;
        if (digests !== undefined) digests = keptDigests;
        changed = true;
      }
    }
    if (changed && replayState !== undefined) {
      replayState = digests === undefined ? { response: replayState.response, blocks: entries! } : { response: replayState.response, blocks: entries!, digests };
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
      const end = slot.block;
      switch (slot.type) {
        case 'text':
        case 'reasoning':
          // The deltas are the content; a block-end of the same type adds its attributes only.
          if (end === undefined) out.push({ type: slot.type, text: slot.text });
          else if (end.type !== slot.type) out.push(end);
          else if (slot.text === '')
            out.push(end); // given whole at its end (no delta content): a recorded stream
          else out.push({ ...end, text: slot.text } as ContentBlock);
          break;
        case 'tool-call':
          if (end === undefined) out.push({ type: 'tool-call', id: slot.id ?? '', name: slot.name ?? '', arguments: slot.text });
          else if (end.type === 'tool-call') out.push({ ...end, id: slot.id ?? end.id ?? '', name: slot.name ?? end.name ?? '', arguments: slot.text === '' ? (end.arguments ?? '') : slot.text });
          else out.push(end);
          break;
        default:
          if (end !== undefined) out.push(end);
          else if (strict) {
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
