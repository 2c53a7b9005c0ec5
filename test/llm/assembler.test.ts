/**
 * BlockAssembler (seed 002 14.2, issue #3 "Deliver 2" and the property-based acceptance items).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BlockAssembler, LlmError, assembleChunks, type ContentBlock, type FinishReason, type ReplayEnvelope, type StreamChunk } from '../../runtime/index.ts';
import { blockOf, blocksArb, build, mergeUsage, mulberry32, planArb, reference, usageArb, type Spec } from './chunks.ts';

const RUNS = { numRuns: 400 };

const failure = (code: string) => Object.freeze({ code, message: code.toLowerCase() });
const finishes: Record<string, FinishReason> = {
  stop: { kind: 'stop' },
  'tool-calls': { kind: 'tool-calls' },
  'max-tokens': { kind: 'max-tokens' },
  error: { kind: 'error', failure: failure('SERVER') },
  aborted: { kind: 'aborted', failure: failure('ABORTED') },
};
const CUT = ['max-tokens', 'error', 'aborted'] as const;
const cutArb = fc.constantFrom(...CUT);
const finishChunk = (kind: keyof typeof finishes, replayState?: ReplayEnvelope): StreamChunk =>
  replayState === undefined ? { type: 'finish', finish: finishes[kind]! } : { type: 'finish', finish: finishes[kind]!, replayState };

function envelopeFor(count: number, tag = 'e'): ReplayEnvelope {
  return { response: { kind: 'fake', version: 1, id: `resp-${tag}` }, blocks: Array.from({ length: count }, (_, i) => ({ entry: i, sig: `${tag}${i}` })) };
}

function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (!Object.isFrozen(value)) return false;
  return Object.values(value).every(isDeepFrozen);
}

describe('BlockAssembler — any chunking assembles to the same message', () => {
  it('property: every framing, chunking, index gap, interleaving and usage placement gives the exact blocks', () => {
    fc.assert(
      fc.property(blocksArb, planArb(), planArb(), fc.constantFrom('stop', 'tool-calls', 'missing'), (blocks, planA, planB, finishKind) => {
        const expected = blocks.map(blockOf);
        const results = [planA, planB].map((plan) => {
          const { chunks } = build(blocks, plan);
          if (finishKind !== 'missing') chunks.push(finishChunk(finishKind as 'stop'));
          return assembleChunks(chunks);
        });
        for (const result of results) {
          expect(result.content).toEqual(expected);
          expect(result.finish).toEqual(finishKind === 'missing' ? { kind: 'stop' } : finishes[finishKind]);
          expect(result.droppedToolCallCount).toBe(0);
          expect(isDeepFrozen(result)).toBe(true);
        }
        expect(results[0]!.content).toEqual(results[1]!.content);
        expect(results[0]!.usage).toEqual(mergeUsage(planA.usage));
        expect(results[1]!.usage).toEqual(mergeUsage(planB.usage));
      }),
      RUNS,
    );
  });

  it('property: pure-delta streams (no block-start / block-end) assemble exactly, tool arguments kept raw', () => {
    fc.assert(
      fc.property(blocksArb, planArb(['none']), (blocks, plan) => {
        const { chunks } = build(blocks, plan);
        expect(chunks.some((c) => c.type === 'block-start' || c.type === 'block-end')).toBe(false);
        const result = assembleChunks([...chunks, finishChunk('tool-calls')]);
        expect(result.content).toEqual(blocks.map(blockOf));
        for (const [i, block] of result.content.entries()) {
          if (block.type === 'tool-call') expect(block.arguments).toBe((blocks[i] as Extract<Spec, { type: 'tool-call' }>).arguments);
        }
      }),
      RUNS,
    );
  });

  it('a concrete interleaved parallel-tool-call stream', () => {
    const result = assembleChunks([
      { type: 'reasoning-delta', index: 0, text: 'think' },
      { type: 'tool-call-delta', index: 1, id: 'c1', name: 'read', arguments: '{"pa' },
      { type: 'tool-call-delta', index: 2, id: 'c2', name: 'ls', arguments: '{' },
      { type: 'tool-call-delta', index: 1, arguments: 'th":"a"}' },
      { type: 'usage', usage: { inputTokens: 10 } },
      { type: 'tool-call-delta', index: 2, arguments: '}' },
      { type: 'reasoning-delta', index: 0, text: 'ing' },
      { type: 'usage', usage: { outputTokens: 4, inputTokens: 12 } },
      { type: 'finish', finish: { kind: 'tool-calls' } },
    ]);
    expect(result).toEqual({
      content: [
        { type: 'reasoning', text: 'thinking' },
        { type: 'tool-call', id: 'c1', name: 'read', arguments: '{"path":"a"}' },
        { type: 'tool-call', id: 'c2', name: 'ls', arguments: '{}' },
      ],
      finish: { kind: 'tool-calls' },
      usage: { inputTokens: 12, outputTokens: 4 },
      droppedToolCallCount: 0,
    });
  });
});

describe('BlockAssembler — envelope alignment under max-tokens truncation', () => {
  it('property: the kept blocks keep exactly their own entries, in order; tool calls and their entries go', () => {
    fc.assert(
      fc.property(blocksArb, planArb(), fc.nat(), (blocks, plan, cutSeed) => {
        const built = build(blocks, plan);
        // The provider stops somewhere in the stream; its envelope has one entry per emitted block.
        const length = built.chunks.length === 0 ? 0 : cutSeed % (built.chunks.length + 1);
        const emitted = reference(blocks, built, length);
        const envelope: ReplayEnvelope = {
          response: { kind: 'fake', version: 1, id: 'r' },
          blocks: emitted.map(({ position }) => ({ entry: position })),
        };
        const result = assembleChunks([...built.chunks.slice(0, length), finishChunk('max-tokens', envelope)]);
        const kept = emitted.filter(({ block }) => block.type !== 'tool-call');
        expect(result.content).toEqual(kept.map(({ block }) => block));
        expect(result.finish).toEqual({ kind: 'max-tokens' });
        expect(result.droppedToolCallCount).toBe(emitted.length - kept.length);
        // A reasoning block right before a dropped call loses its entry: it cannot be replayed alone.
        const orphaned = (k: number) => {
          const at = emitted.indexOf(kept[k]);
          return kept[k]!.block.type === 'reasoning' && emitted[at + 1]?.block.type === 'tool-call';
        };
        expect(result.replayState).toEqual({ response: { kind: 'fake', version: 1, id: 'r' }, blocks: kept.map(({ position }, k) => (orphaned(k) ? null : { entry: position })) });
        expect(result.replayState!.blocks!.length).toBe(result.content.length);
        expect(result.fullReplayState).toBe(envelope);
      }),
      RUNS,
    );
  });

  it('property: an envelope whose entry count does not match the emitted blocks is dropped as a whole (any finish)', () => {
    fc.assert(
      fc.property(
        blocksArb,
        planArb(),
        fc.integer({ min: -3, max: 3 }).filter((d) => d !== 0),
        fc.constantFrom('stop', 'tool-calls', 'max-tokens', 'error', 'aborted'),
        (blocks, plan, delta, kind) => {
          const count = blocks.length + delta;
          fc.pre(count >= 0);
          const envelope = envelopeFor(count);
          const result = assembleChunks([...build(blocks, plan).chunks, finishChunk(kind as 'stop', envelope)]);
          expect(result.replayState).toBeUndefined();
          expect('replayState' in result).toBe(false);
          expect(result.fullReplayState).toBe(envelope);
          const cut = (CUT as readonly string[]).includes(kind);
          expect(result.content).toEqual(blocks.map(blockOf).filter((b) => !cut || b.type !== 'tool-call'));
        },
      ),
      RUNS,
    );
  });

  it('an envelope without blocks keeps its response part; an aligned envelope on a clean finish is kept as is', () => {
    const chunks: StreamChunk[] = [
      { type: 'text-delta', index: 0, text: 'a' },
      { type: 'tool-call-delta', index: 1, id: 'c', name: 'n', arguments: '{"x":' },
    ];
    const responseOnly = assembleChunks([...chunks, finishChunk('max-tokens', { response: { id: 'r' } })]);
    expect(responseOnly.content).toEqual([{ type: 'text', text: 'a' }]);
    expect(responseOnly.replayState).toEqual({ response: { id: 'r' } });
    const aligned = envelopeFor(2);
    const clean = assembleChunks([...chunks, finishChunk('tool-calls', aligned)]);
    expect(clean.replayState).toBe(aligned);
    expect(clean.content.map((b) => b.type)).toEqual(['text', 'tool-call']);
  });
});

describe('BlockAssembler — no tool call from a truncated stream', () => {
  const index = fc.nat({ max: 5 });
  const anyBlock: fc.Arbitrary<ContentBlock> = fc.oneof(
    fc.record({ type: fc.constant('text' as const), text: fc.string({ maxLength: 5 }) }),
    fc.record({ type: fc.constant('reasoning' as const), text: fc.string({ maxLength: 5 }) }),
    fc.record({ type: fc.constant('tool-call' as const), id: fc.string({ maxLength: 3 }), name: fc.string({ maxLength: 3 }), arguments: fc.string({ maxLength: 6 }) }),
    fc.record({ type: fc.constant('image' as const), mediaType: fc.constant('image/png'), data: fc.constant('AA==') }),
  );
  const anyChunk: fc.Arbitrary<StreamChunk> = fc.oneof(
    fc.record({ type: fc.constant('block-start' as const), index, blockType: fc.constantFrom('text', 'reasoning', 'tool-call') }),
    fc.record({ type: fc.constant('text-delta' as const), index, text: fc.string({ maxLength: 4 }) }),
    fc.record({ type: fc.constant('reasoning-delta' as const), index, text: fc.string({ maxLength: 4 }) }),
    fc.record(
      { type: fc.constant('tool-call-delta' as const), index, id: fc.string({ maxLength: 3 }), name: fc.string({ maxLength: 3 }), arguments: fc.string({ maxLength: 4 }) },
      { requiredKeys: ['type', 'index'] },
    ),
    fc.record({ type: fc.constant('block-end' as const), index, block: anyBlock }),
    fc.record({ type: fc.constant('usage' as const), usage: usageArb }),
  );
  const anyEnvelope = fc.option(fc.record({ response: fc.jsonValue(), blocks: fc.array(fc.jsonValue(), { maxLength: 7 }) }, { requiredKeys: ['response'] }), { nil: undefined });

  it('property: any chunk soup ending in max-tokens / error / aborted yields no tool call, and a kept envelope stays aligned', () => {
    fc.assert(
      fc.property(fc.array(anyChunk, { maxLength: 40 }), cutArb, anyEnvelope, fc.array(anyChunk, { maxLength: 5 }), (head, kind, envelope, tail) => {
        const assembler = new BlockAssembler();
        for (const c of head) assembler.push(c);
        assembler.push(finishChunk(kind, envelope));
        // A hostile adapter keeps going after its finish: a complete tool call and a second, clean finish.
        for (const c of tail) assembler.push(c);
        assembler.push({ type: 'block-end', index: 6, block: { type: 'tool-call', id: 'late', name: 'rm', arguments: '{}' } });
        assembler.push({ type: 'finish', finish: { kind: 'tool-calls' } });
        const result = assembler.result();
        expect(result.content.filter((b) => b.type === 'tool-call')).toEqual([]);
        expect(result.finish).toEqual(finishes[kind]);
        if (result.replayState?.blocks !== undefined) expect(result.replayState.blocks.length).toBe(result.content.length);
        expect(isDeepFrozen(result)).toBe(true);
      }),
      RUNS,
    );
  });

  it('property: on any finish, a kept envelope has exactly one entry per content block', () => {
    fc.assert(
      fc.property(fc.array(anyChunk, { maxLength: 30 }), fc.constantFrom('stop', 'tool-calls', 'max-tokens', 'error', 'aborted'), anyEnvelope, (head, kind, envelope) => {
        const result = assembleChunks([...head, finishChunk(kind as 'stop', envelope)]);
        if (result.replayState?.blocks !== undefined) expect(result.replayState.blocks.length).toBe(result.content.length);
        if (envelope !== undefined) expect(result.fullReplayState).toBe(envelope);
      }),
      RUNS,
    );
  });

  it('complete (closed) tool calls are dropped too when the stream was cut, with the count reported', () => {
    const result = assembleChunks([
      { type: 'block-end', index: 0, block: { type: 'tool-call', id: 'a', name: 'x', arguments: '{}' } },
      { type: 'text-delta', index: 1, text: 'hi' },
      { type: 'tool-call-delta', index: 2, id: 'b', name: 'y', arguments: '{"p":"/et' },
      { type: 'finish', finish: finishes['max-tokens']!, replayState: envelopeFor(3) },
    ]);
    expect(result.content).toEqual([{ type: 'text', text: 'hi' }]);
    expect(result.droppedToolCallCount).toBe(2);
    expect(result.replayState).toEqual({ response: { kind: 'fake', version: 1, id: 'resp-e' }, blocks: [{ entry: 1, sig: 'e1' }] });
  });
});

describe('BlockAssembler — closed blocks, unknown blocks, defaults', () => {
  it('property: deltas after a close and a second close are ignored (first close wins)', () => {
    fc.assert(
      fc.property(blocksArb, planArb(['full', 'end']), fc.string({ minLength: 1, maxLength: 5 }), (blocks, plan, junk) => {
        const built = build(blocks, plan);
        const chunks: StreamChunk[] = [];
        for (const c of built.chunks) {
          chunks.push(c);
          if (c.type !== 'block-end') continue;
          chunks.push(
            { type: 'text-delta', index: c.index, text: junk },
            { type: 'reasoning-delta', index: c.index, text: junk },
            { type: 'tool-call-delta', index: c.index, id: junk, name: junk, arguments: junk },
            { type: 'block-start', index: c.index, blockType: 'text', id: junk },
            { type: 'block-end', index: c.index, block: { type: 'text', text: `second close ${junk}` } },
          );
        }
        const result = assembleChunks([...chunks, finishChunk('stop')]);
        expect(result.content).toEqual(blocks.map(blockOf));
      }),
      RUNS,
    );
  });

  it('the deltas are the content of text, reasoning and tool-call blocks; block-end adds attributes only', () => {
    const result = assembleChunks([
      { type: 'text-delta', index: 0, text: 'masked' },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'the original secret', refusal: true } },
      { type: 'reasoning-delta', index: 1, text: 'r' },
      { type: 'block-end', index: 1, block: { type: 'reasoning', text: 'other', redacted: true } },
      { type: 'tool-call-delta', index: 2, arguments: '{"a":1}' },
      { type: 'block-end', index: 2, block: { type: 'tool-call', id: 'c1', name: 'f', arguments: '{"a":"secret"}' } },
      { type: 'text-delta', index: 3, text: 'plain' },
      { type: 'block-end', index: 3 },
    ]);
    expect(result.content).toEqual([
      { type: 'text', text: 'masked', refusal: true },
      { type: 'reasoning', text: 'r', redacted: true },
      { type: 'tool-call', id: 'c1', name: 'f', arguments: '{"a":1}' },
      { type: 'text', text: 'plain' },
    ]);
    expect(Object.isFrozen(result.content[0])).toBe(true);
  });

  it('a block of a type not built from deltas is its block-end block (same object, frozen)', () => {
    const block = { type: 'image' as const, mediaType: 'image/png', data: 'AA==' };
    const result = assembleChunks([
      { type: 'block-start', index: 0, blockType: 'image' },
      { type: 'block-end', index: 0, block },
    ]);
    expect(result.content[0]).toBe(block);
    expect(Object.isFrozen(block)).toBe(true);
  });

  it('a block-end without a block closes an open block; for a block never opened it is MALFORMED_RESPONSE', () => {
    const assembler = new BlockAssembler();
    assembler.push({ type: 'text-delta', index: 0, text: 'a' });
    assembler.push({ type: 'block-end', index: 0 });
    assembler.push({ type: 'text-delta', index: 0, text: 'b' });
    expect(assembler.result().content).toEqual([{ type: 'text', text: 'a' }]);
    expect(() => new BlockAssembler().push({ type: 'block-end', index: 3 })).toThrow(expect.objectContaining({ code: 'MALFORMED_RESPONSE' }));
  });

  it('a delta of another kind than its block is ignored', () => {
    const result = assembleChunks([
      { type: 'text-delta', index: 0, text: 'a' },
      { type: 'reasoning-delta', index: 0, text: 'r' },
      { type: 'tool-call-delta', index: 0, id: 'x', arguments: '{}' },
      { type: 'text-delta', index: 0, text: 'b' },
    ]);
    expect(result.content).toEqual([{ type: 'text', text: 'ab' }]);
  });

  it("a tool call's first non-empty id and name win (block-start or delta); later ones are ignored", () => {
    const result = assembleChunks([
      { type: 'tool-call-delta', index: 0, id: '', name: '', arguments: '{' },
      { type: 'tool-call-delta', index: 0, id: 'first', name: 'read', arguments: '"a"' },
      { type: 'tool-call-delta', index: 0, id: 'second', name: 'write', arguments: ':1}' },
      { type: 'block-start', index: 1, blockType: 'tool-call', id: 'start-id', name: 'ls' },
      { type: 'tool-call-delta', index: 1, id: 'delta-id', name: 'rm' },
    ]);
    expect(result.content).toEqual([
      { type: 'tool-call', id: 'first', name: 'read', arguments: '{"a":1}' },
      { type: 'tool-call', id: 'start-id', name: 'ls', arguments: '' },
    ]);
  });

  it('an unclosed block of an unknown type throws MALFORMED_RESPONSE; closed, it is kept as its block', () => {
    const open = new BlockAssembler();
    open.push({ type: 'text-delta', index: 0, text: 'see:' });
    open.push({ type: 'block-start', index: 1, blockType: 'image' });
    open.push({ type: 'text-delta', index: 1, text: 'ignored' });
    open.push({ type: 'finish', finish: { kind: 'stop' } });
    let thrown: unknown;
    try {
      open.result();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LlmError);
    expect((thrown as LlmError).code).toBe('MALFORMED_RESPONSE');
    // interruptedBlocks never throws: it keeps what it can.
    expect(open.interruptedBlocks()).toEqual([{ type: 'text', text: 'see:' }]);

    const image = { type: 'image' as const, mediaType: 'image/png', data: 'AA==' };
    const closed = assembleChunks([
      { type: 'block-start', index: 0, blockType: 'image' },
      { type: 'block-end', index: 0, block: image },
    ]);
    expect(closed.content).toEqual([image]);
  });

  it('a chunk index that is not a small non-negative integer, or a block-end without a block, throws MALFORMED_RESPONSE', () => {
    for (const index of [-1, 1.5, Number.NaN, 1e9]) {
      const assembler = new BlockAssembler();
      expect(() => assembler.push({ type: 'text-delta', index, text: 'x' })).toThrow(expect.objectContaining({ code: 'MALFORMED_RESPONSE' }));
      expect(() => assembler.push({ type: 'tool-call-delta', index, arguments: 'x' })).toThrow(expect.objectContaining({ code: 'MALFORMED_RESPONSE' }));
    }
    const assembler = new BlockAssembler();
    expect(() => assembler.push({ type: 'block-end', index: 0, block: undefined as never })).toThrow(expect.objectContaining({ code: 'MALFORMED_RESPONSE' }));
  });

  it('a missing finish is stop; chunks after a finish are ignored; the first finish wins', () => {
    const assembler = new BlockAssembler();
    assembler.push({ type: 'text-delta', index: 0, text: 'a' });
    expect(assembler.finished).toBe(false);
    expect(assembler.result().finish).toEqual({ kind: 'stop' });
    assembler.push({ type: 'finish', finish: { kind: 'tool-calls' } });
    expect(assembler.finished).toBe(true);
    assembler.push({ type: 'text-delta', index: 0, text: 'b' });
    assembler.push({ type: 'usage', usage: { inputTokens: 1 } });
    assembler.push({ type: 'finish', finish: { kind: 'stop' } });
    expect(assembler.result()).toEqual({ content: [{ type: 'text', text: 'a' }], finish: { kind: 'tool-calls' }, droppedToolCallCount: 0 });
  });

  it('an empty stream assembles to no content, stop, no usage, no replay state', () => {
    expect(assembleChunks([])).toEqual({ content: [], finish: { kind: 'stop' }, droppedToolCallCount: 0 });
  });
});

describe('BlockAssembler — interruptedBlocks and usage', () => {
  it('property: interruptedBlocks keeps the non-empty text and reasoning seen so far, in order, and no tool calls', () => {
    fc.assert(
      fc.property(blocksArb, planArb(), fc.nat(), (blocks, plan, cutSeed) => {
        const built = build(blocks, plan);
        const length = cutSeed % (built.chunks.length + 1);
        const assembler = new BlockAssembler();
        for (const c of built.chunks.slice(0, length)) assembler.push(c);
        const expected = reference(blocks, built, length)
          .map(({ block }) => block)
          .filter((block) => (block.type === 'text' || block.type === 'reasoning') && block.text.length > 0);
        const kept = assembler.interruptedBlocks();
        expect(kept).toEqual(expected);
        expect(isDeepFrozen(kept)).toBe(true);
      }),
      RUNS,
    );
  });

  it('property: usage is merged field-wise, a later reported count winning, 0 kept, absent when never reported', () => {
    fc.assert(
      fc.property(fc.array(usageArb, { maxLength: 6 }), fc.integer(), (usages, seed) => {
        const random = mulberry32(seed);
        const chunks: StreamChunk[] = [{ type: 'text-delta', index: 0, text: 'x' }];
        for (const usage of usages) chunks.splice(1 + Math.floor(random() * chunks.length), 0, { type: 'usage', usage });
        const result = assembleChunks(chunks);
        const expected = mergeUsage(chunks.flatMap((c) => (c.type === 'usage' ? [c.usage] : [])));
        if (expected === undefined) expect('usage' in result).toBe(false);
        else expect(result.usage).toEqual(expected);
      }),
      RUNS,
    );
    const result = assembleChunks([
      { type: 'usage', usage: { inputTokens: 5, outputTokens: 0 } },
      { type: 'usage', usage: { outputTokens: 7, cacheReadTokens: undefined } },
    ]);
    expect(result.usage).toEqual({ inputTokens: 5, outputTokens: 7 });
    expect(Object.keys(result.usage!)).toEqual(['inputTokens', 'outputTokens']);
  });
});
