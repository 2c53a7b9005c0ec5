/**
 * Generators for the assembler property tests: block sequences (text, reasoning, tool calls with JSON
 * arguments) and their chunk streams under random chunking, framing, index gaps and interleaving,
 * plus a reference model of what a (possibly truncated) well-formed stream assembles to.
 */
import fc from 'fast-check';
import type { ContentBlock, StreamChunk, TokenUsage } from '../../runtime/index.ts';

export type Spec =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'reasoning'; readonly text: string }
  | { readonly type: 'tool-call'; readonly id: string; readonly name: string; readonly arguments: string };

/** `none` = pure delta; `full` = block-start + deltas + block-end; `start` / `end` = only one of them. */
export type Framing = 'none' | 'full' | 'start' | 'end';

export interface Plan {
  readonly framing: Framing;
  /** Random choices: where texts are cut, how blocks interleave, where usage goes. */
  readonly seed: number;
  /** Extra index gap before each block (indexes stay increasing, maybe sparse). */
  readonly gaps: readonly number[];
  readonly usage: readonly TokenUsage[];
  /** Where a tool call's id and name travel when the block is framed. */
  readonly idPlacement: 'start' | 'delta' | 'both';
}

export interface Built {
  readonly chunks: StreamChunk[];
  /** For each chunk, the position of the block it belongs to (-1 for usage). */
  readonly owner: number[];
  /** The chunk index of each block. */
  readonly indexes: number[];
}

const textArb = fc.string({ maxLength: 30, unit: 'grapheme' });
export const specArb: fc.Arbitrary<Spec> = fc.oneof(
  fc.record({ type: fc.constant('text' as const), text: textArb }),
  fc.record({ type: fc.constant('reasoning' as const), text: textArb }),
  fc.record({
    type: fc.constant('tool-call' as const),
    id: fc.string({ minLength: 1, maxLength: 10 }),
    name: fc.stringMatching(/^[a-z_][a-z0-9_]{0,11}$/),
    arguments: fc.json({ maxDepth: 3 }),
  }),
);
export const blocksArb = fc.array(specArb, { maxLength: 7 });

export const usageArb: fc.Arbitrary<TokenUsage> = fc.record(
  {
    inputTokens: fc.nat({ max: 1_000_000 }),
    outputTokens: fc.nat({ max: 100_000 }),
    cacheReadTokens: fc.nat({ max: 1_000_000 }),
    cacheWriteTokens: fc.nat({ max: 1_000_000 }),
    reasoningTokens: fc.nat({ max: 100_000 }),
  },
  { requiredKeys: [] },
);

export const planArb = (framings: readonly Framing[] = ['none', 'full', 'start', 'end']): fc.Arbitrary<Plan> =>
  fc.record({
    framing: fc.constantFrom(...framings),
    seed: fc.integer(),
    gaps: fc.array(fc.nat({ max: 2 }), { minLength: 8, maxLength: 8 }),
    usage: fc.array(usageArb, { maxLength: 3 }),
    idPlacement: fc.constantFrom('start' as const, 'delta' as const, 'both' as const),
  });

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Cuts `s` into 1..n pieces at random code-unit positions (an empty piece now and then). */
export function split(s: string, random: () => number): string[] {
  const pieces: string[] = [];
  let at = 0;
  while (at < s.length) {
    if (random() < 0.08) pieces.push('');
    const size = 1 + Math.floor(random() * Math.min(8, s.length - at));
    pieces.push(s.slice(at, at + size));
    at += size;
  }
  if (pieces.length === 0) pieces.push('');
  return pieces;
}

/** A canonical content block for a spec (a fresh object). */
export function blockOf(spec: Spec): ContentBlock {
  return spec.type === 'tool-call' ? { type: 'tool-call', id: spec.id, name: spec.name, arguments: spec.arguments } : { type: spec.type, text: spec.text };
}

export function build(blocks: readonly Spec[], plan: Plan): Built {
  const random = mulberry32(plan.seed);
  const indexes: number[] = [];
  let next = 0;
  for (let i = 0; i < blocks.length; i++) {
    next += plan.gaps[i % plan.gaps.length]!;
    indexes.push(next);
    next++;
  }
  const queues = blocks.map((spec, i) => {
    const index = indexes[i]!;
    const queue: StreamChunk[] = [];
    const start = plan.framing === 'full' || plan.framing === 'start';
    const end = plan.framing === 'full' || plan.framing === 'end';
    const idOnStart = start && plan.idPlacement !== 'delta';
    const idOnDelta = !idOnStart || plan.idPlacement === 'both';
    if (start) {
      queue.push(spec.type === 'tool-call' && idOnStart ? { type: 'block-start', index, blockType: spec.type, id: spec.id, name: spec.name } : { type: 'block-start', index, blockType: spec.type });
    }
    if (spec.type === 'tool-call') {
      split(spec.arguments, random).forEach((piece, k) => {
        queue.push(k === 0 && idOnDelta ? { type: 'tool-call-delta', index, id: spec.id, name: spec.name, arguments: piece } : { type: 'tool-call-delta', index, arguments: piece });
      });
    } else {
      const type = spec.type === 'text' ? 'text-delta' : 'reasoning-delta';
      for (const piece of split(spec.text, random)) queue.push({ type, index, text: piece });
    }
    if (end) queue.push({ type: 'block-end', index, block: blockOf(spec) });
    return queue;
  });
  const chunks: StreamChunk[] = [];
  const owner: number[] = [];
  const heads = queues.map(() => 0);
  for (;;) {
    const open = queues.map((_q, i) => i).filter((i) => heads[i]! < queues[i]!.length);
    if (open.length === 0) break;
    // Mostly sequential (like most providers), sometimes interleaved (parallel tool calls).
    const pick = random() < 0.7 ? open[0]! : open[Math.floor(random() * open.length)]!;
    chunks.push(queues[pick]![heads[pick]!++]!);
    owner.push(pick);
  }
  // Usage chunks keep their order (a later one may overwrite an earlier count).
  let after = 0;
  for (const usage of plan.usage) {
    const at = after + Math.floor(random() * (chunks.length - after + 1));
    after = at + 1;
    chunks.splice(at, 0, { type: 'usage', usage });
    owner.splice(at, 0, -1);
  }
  return { chunks, owner, indexes };
}

/**
 * What the first `length` chunks of a built stream assemble to, block by block (position order):
 * a closed block is its block-end block; an open one is built from the deltas seen.
 */
export function reference(blocks: readonly Spec[], built: Built, length: number): { position: number; block: ContentBlock }[] {
  const state = blocks.map(() => ({ seen: false, ended: false, text: '', id: undefined as string | undefined, name: undefined as string | undefined }));
  for (let k = 0; k < length; k++) {
    const position = built.owner[k]!;
    if (position < 0) continue;
    const s = state[position]!;
    const c = built.chunks[k]!;
    s.seen = true;
    if (c.type === 'block-end') s.ended = true;
    if (c.type === 'text-delta' || c.type === 'reasoning-delta') s.text += c.text;
    if (c.type === 'tool-call-delta' || c.type === 'block-start') {
      if (c.id !== undefined && s.id === undefined) s.id = c.id;
      if (c.name !== undefined && s.name === undefined) s.name = c.name;
    }
    if (c.type === 'tool-call-delta' && c.arguments !== undefined) s.text += c.arguments;
  }
  const out: { position: number; block: ContentBlock }[] = [];
  blocks.forEach((spec, position) => {
    const s = state[position]!;
    if (!s.seen) return;
    if (s.ended) out.push({ position, block: blockOf(spec) });
    else if (spec.type === 'tool-call') out.push({ position, block: { type: 'tool-call', id: s.id ?? '', name: s.name ?? '', arguments: s.text } });
    else out.push({ position, block: { type: spec.type, text: s.text } });
  });
  return out;
}

/** Field-wise merge of usage chunks, a later defined value winning. */
export function mergeUsage(list: readonly TokenUsage[]): TokenUsage | undefined {
  if (list.length === 0) return undefined;
  const out: Record<string, number> = {};
  for (const usage of list) for (const [key, value] of Object.entries(usage)) if (value !== undefined) out[key] = value;
  return out;
}
