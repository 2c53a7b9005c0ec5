/**
 * `rewriteText`: the helper for the common `llm/stream` middleware that rewrites model text —
 * redacting secrets, masking names, stripping a tag — when what it looks for may be split across
 * deltas (`"sk-12"` + `"34…"`).
 *
 * ```ts
 * ctx.on('llm/stream', (request, next) =>
 *   rewriteText(next(request), { pattern: /sk-[A-Za-z0-9]{32}/g, replace: '[redacted]', maxMatchLength: 35 }));
 * ```
 *
 * Per block (text and reasoning, or those named in `blocks`), text is held back just long enough
 * that no match can straddle what was already sent: at most `maxMatchLength - 1` code units, and
 * all of it at the block's `block-end`, at `finish` and when the stream ends. Matches are replaced
 * as `String.prototype.replace` would; deltas that become empty are dropped. Other chunks pass
 * through unchanged and in order (held text of a block always precedes that block's `block-end`).
 * Because the deltas are the content (`StreamChunkMap`), the rewrite is what the assembled message,
 * the journal and the next request see; the seam then drops the replay entry of every block whose
 * text changed (its signature or encrypted state was made for the original). A `block-end` that
 * still repeats the text (an adapter written before the rule) gets the rewrite too.
 *
 * The pattern must not look further than `maxMatchLength` (no lookahead past it, no `$` or `\b`
 * at the end of a match): the text after the held-back window is not there yet.
 */
import type { StreamChunk } from './types.ts';

/** What {@link rewriteText} finds and what it puts instead; lengths are in UTF-16 code units. */
export interface TextRewrite {
  /** What to find. Used globally (a missing `g` flag is added). */
  readonly pattern: RegExp;
  /** The replacement: a string (with `$&` etc. as in `String.prototype.replace`) or a function of the match. */
  readonly replace: string | ((match: string) => string);
  /** The longest text the pattern can match, in UTF-16 code units (≥ 1). */
  readonly maxMatchLength: number;
  /** Which blocks to rewrite; both by default. */
  readonly blocks?: readonly ('text' | 'reasoning')[];
}

/**
 * Rewrites the text of a chunk stream (see the module docstring).
 * @throws TypeError when `maxMatchLength` is not a positive integer.
 */
export function rewriteText(stream: AsyncIterable<StreamChunk>, rewrite: TextRewrite): AsyncIterable<StreamChunk> {
  const { maxMatchLength } = rewrite;
  if (!Number.isInteger(maxMatchLength) || maxMatchLength < 1) throw new TypeError(`rewriteText: maxMatchLength must be a positive integer, got ${String(maxMatchLength)}.`);
  const flags = rewrite.pattern.flags.includes('g') ? rewrite.pattern.flags : `${rewrite.pattern.flags}g`;
  const pattern = new RegExp(rewrite.pattern.source, flags);
  const replace = rewrite.replace;
  const replaceMatch = (match: RegExpExecArray): string => (typeof replace === 'function' ? replace(match[0]) : match[0].replace(new RegExp(pattern.source, pattern.flags.replace('g', '')), replace));
  const text = rewrite.blocks === undefined || rewrite.blocks.includes('text');
  const reasoning = rewrite.blocks === undefined || rewrite.blocks.includes('reasoning');
  return {
    async *[Symbol.asyncIterator]() {
      /** Held-back text per block index, with the delta type it came in. */
      const pending = new Map<number, { type: 'text-delta' | 'reasoning-delta'; text: string }>();
      /** Rewrites what can be decided of `held`; returns the text to send now (`final`: all of it). */
      const take = (held: { text: string }, final: boolean): string => {
        const buffer = held.text;
        const safe = final ? buffer.length : buffer.length - (maxMatchLength - 1);
        let out = '';
        let pos = 0;
        pattern.lastIndex = 0;
        for (let match = pattern.exec(buffer); match !== null; match = pattern.exec(buffer)) {
          if (match.index >= safe) break; // may still grow with the next delta
          if (match[0].length === 0) {
            pattern.lastIndex++;
            continue;
          }
          out += buffer.slice(pos, match.index) + replaceMatch(match);
          pos = match.index + match[0].length;
        }
        const cut = Math.max(pos, safe);
        out += buffer.slice(pos, cut);
        held.text = buffer.slice(cut);
        return out;
      };
      const flush = (index: number): StreamChunk | undefined => {
        const held = pending.get(index);
        if (held === undefined) return undefined;
        pending.delete(index);
        const out = take(held, true);
        return out === '' ? undefined : { type: held.type, index, text: out };
      };
      for await (const chunk of stream) {
        if ((chunk.type === 'text-delta' && text) || (chunk.type === 'reasoning-delta' && reasoning)) {
          let held = pending.get(chunk.index);
          if (held === undefined) {
            held = { type: chunk.type, text: '' };
            pending.set(chunk.index, held);
          }
          held.text += chunk.text;
          const out = take(held, false);
          if (out !== '') yield { type: chunk.type, index: chunk.index, text: out };
          continue;
        }
        if (chunk.type === 'block-end') {
          const last = flush(chunk.index);
          if (last !== undefined) yield last;
          const block = chunk.block;
          if (block !== undefined && ((block.type === 'text' && text) || (block.type === 'reasoning' && reasoning)) && block.text !== '') {
            yield { ...chunk, block: { ...block, text: block.text.replace(pattern, replace as string) } };
            continue;
          }
        } else if (chunk.type === 'finish') {
          for (const index of [...pending.keys()].sort((a, b) => a - b)) {
            const last = flush(index);
            if (last !== undefined) yield last;
          }
        }
        yield chunk;
      }
      for (const index of [...pending.keys()].sort((a, b) => a - b)) {
        const last = flush(index);
        if (last !== undefined) yield last;
      }
    },
  };
}
