/**
 * Content digests for replay-state lock-step (seed 002 14.2): the seam fingerprints the text of
 * every text and reasoning block as the adapter produced it; the assembler fingerprints what it
 * assembled after `llm/stream` middleware. A mismatch means a middleware rewrote the block, so the
 * provider's signed or encrypted state for it no longer describes it (`ReplayEnvelope.digests`).
 *
 * FNV-1a (32 bit) over UTF-16 code units, plus the length: streaming (a digest of deltas equals the
 * digest of their concatenation), no allocation per delta. Not a cryptographic hash — it detects
 * rewrites, it does not defend against someone forging a collision with a provider's signature.
 */
import type { StreamChunk } from './types.ts';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function fnv(hash: number, text: string): number {
  let h = hash;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h >>> 0;
}

function format(length: number, hash: number): string {
  return `${length.toString(36)}.${hash.toString(36)}`;
}

/** The digest of a block's text, as `ReplayEnvelope.digests` holds it. */
export function contentDigest(text: string): string {
  return format(text.length, fnv(FNV_OFFSET, text));
}

const NONE = 0;
const TEXT = 1;
const OTHER = 2;

/**
 * Digests of an adapter's blocks, fed chunk by chunk at the innermost step of `llm/stream`.
 * @internal
 */
export class DigestTracker {
  private readonly hashes: number[] = [];
  private readonly lengths: number[] = [];
  /** Per index: `NONE` (unseen), `TEXT` (text or reasoning), `OTHER`. */
  private readonly kinds: number[] = [];

  push(chunk: StreamChunk): void {
    const type = chunk.type;
    if (type === 'usage' || type === 'finish') return;
    const index = (chunk as { index: number }).index;
    if (!(index >= 0 && index <= 0xffff) || !Number.isInteger(index)) return; // the assembler rejects it
    if (type === 'text-delta' || type === 'reasoning-delta') {
      if (this.kinds[index] !== TEXT) {
        if (this.kinds[index] === OTHER) return;
        this.kinds[index] = TEXT;
        this.hashes[index] = FNV_OFFSET;
        this.lengths[index] = 0;
      }
      this.hashes[index] = fnv(this.hashes[index]!, chunk.text);
      this.lengths[index]! += chunk.text.length;
      return;
    }
    if ((this.kinds[index] ?? NONE) !== NONE) return;
    const blockType = type === 'block-start' ? chunk.blockType : type === 'block-end' ? chunk.block?.type : 'tool-call';
    if (blockType === 'text' || blockType === 'reasoning') {
      this.kinds[index] = TEXT;
      this.hashes[index] = FNV_OFFSET;
      this.lengths[index] = 0;
    } else if (blockType !== undefined) this.kinds[index] = OTHER;
  }

  /** One digest per block seen, in index order (`null` for blocks that are not text or reasoning). */
  digests(): (string | null)[] {
    const out: (string | null)[] = [];
    const kinds = this.kinds;
    for (let index = 0; index < kinds.length; index++) {
      const kind = kinds[index];
      if (kind === undefined || kind === NONE) continue;
      out.push(kind === TEXT ? format(this.lengths[index]!, this.hashes[index]!) : null);
    }
    return out;
  }
}
