/**
 * Issue 14, deliverable 1: the block rule (StreamChunkMap) through the real `llm/stream` seam. A
 * middleware that rewrites, splits, merges or drops text and reasoning deltas changes the assembled
 * message; a rewritten block loses its replay entry (lock-step, seed 002 14.2), an untouched one
 * keeps it byte for byte; `rewriteText` finds a match split over any delta boundaries.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BlockAssembler,
  contentDigest,
  createHarness,
  createUserMessage,
  definePlugin,
  LlmAdapter,
  rewriteText,
  type GenerateOptions,
  type Harness,
  type ReplayEnvelope,
  type StreamChunk,
} from '../../runtime/index.ts';

/** An adapter that writes replay state: a signed reasoning block, a text block, a tool call. */
class SignedAdapter extends LlmAdapter {
  override readonly replayFormat = { kind: 'signed', version: 1 };
  async *stream(_options: GenerateOptions): AsyncIterable<StreamChunk> {
    yield { type: 'block-start', index: 0, blockType: 'reasoning' };
    yield { type: 'reasoning-delta', index: 0, text: 'think about ' };
    yield { type: 'reasoning-delta', index: 0, text: 'tok-42' };
    yield { type: 'block-end', index: 0 };
    yield { type: 'text-delta', index: 1, text: 'answer ' };
    yield { type: 'text-delta', index: 1, text: 'plain' };
    yield { type: 'block-end', index: 1 };
    yield { type: 'block-start', index: 2, blockType: 'tool-call', id: 'c1', name: 'f' };
    yield { type: 'tool-call-delta', index: 2, arguments: '{}' };
    yield { type: 'block-end', index: 2 };
    yield {
      type: 'finish',
      finish: { kind: 'tool-calls' },
      replayState: { response: { kind: 'signed', version: 1, id: 'r1' }, blocks: [{ signature: 'S0', nested: { a: [1] } }, { item: 'm1' }, { item: 'f1' }] },
    };
  }
}

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

type Middleware = (source: AsyncIterable<StreamChunk>) => AsyncIterable<StreamChunk>;

async function through(middleware: Middleware | undefined) {
  harness = await createHarness({
    config: {
      plugins: [
        { plugin: definePlugin({ name: 'signed', setup: (ctx) => void ctx.llm.registerAdapter(['signed'], new SignedAdapter()) }) },
        ...(middleware ? [{ plugin: definePlugin({ name: 'mw', setup: (ctx) => void ctx.on('llm/stream', (request, next) => middleware(next(request))) }) }] : []),
      ],
    },
  });
  const assembler = new BlockAssembler();
  const chunks: StreamChunk[] = [];
  for await (const chunk of harness.llm.stream({ provider: 'signed', model: 'm', messages: [createUserMessage('hi')] })) {
    chunks.push(chunk);
    assembler.push(chunk);
  }
  return { chunks, result: assembler.result() };
}

const map = (fn: (chunk: StreamChunk) => StreamChunk[]): Middleware =>
  async function* (source) {
    for await (const chunk of source) yield* fn(chunk);
  };

describe('block rule: deltas are the content, replay entries follow the content', () => {
  it('untouched: every entry kept byte for byte, the seam adds a digest per text block', async () => {
    const { result, chunks } = await through(undefined);
    expect(result.replayState!.blocks).toEqual([{ signature: 'S0', nested: { a: [1] } }, { item: 'm1' }, { item: 'f1' }]);
    expect(result.replayState!.digests).toEqual([contentDigest('think about tok-42'), contentDigest('answer plain'), null]);
    // The journaled finish chunk carries the digests, so a replay of the chunks decides alike.
    expect((chunks.at(-1) as { replayState: ReplayEnvelope }).replayState.digests).toEqual(result.replayState!.digests);
  });

  it('splitting and merging deltas without changing the text keeps every entry', async () => {
    let held = '';
    const { result } = await through(
      map((chunk) => {
        if (chunk.type === 'reasoning-delta') return [...chunk.text].map((c) => ({ ...chunk, text: c })); // split
        if (chunk.type === 'text-delta') {
          held += chunk.text; // merge: one delta at block-end
          return [];
        }
        if (chunk.type === 'block-end' && chunk.index === 1) return [{ type: 'text-delta', index: 1, text: held }, chunk];
        return [chunk];
      }),
    );
    expect(result.content.slice(0, 2)).toEqual([
      { type: 'reasoning', text: 'think about tok-42' },
      { type: 'text', text: 'answer plain' },
    ]);
    expect(result.replayState!.blocks).toEqual([{ signature: 'S0', nested: { a: [1] } }, { item: 'm1' }, { item: 'f1' }]);
  });

  it('rewriting reasoning: the message has the rewrite, that block loses its signed entry, the others keep theirs', async () => {
    const { result } = await through(map((chunk) => [chunk.type === 'reasoning-delta' ? { ...chunk, text: chunk.text.replace('tok-42', '***') } : chunk]));
    expect(result.content[0]).toEqual({ type: 'reasoning', text: 'think about ***' });
    expect(result.replayState!.blocks).toEqual([null, { item: 'm1' }, { item: 'f1' }]);
    expect(result.replayState!.digests![0]).toBeNull();
  });

  it('dropping deltas: the text is gone from the message (a block-end cannot bring it back)', async () => {
    const { result } = await through(map((chunk) => (chunk.type === 'text-delta' && chunk.text === 'plain' ? [] : [chunk])));
    expect(result.content[1]).toEqual({ type: 'text', text: 'answer ' });
    expect(result.replayState!.blocks![1]).toBeNull();
  });

  it('dropping a whole block misaligns the envelope: it is dropped as a whole, never moved onto another block', async () => {
    const { result } = await through(map((chunk) => ('index' in chunk && chunk.index === 0 ? [] : [chunk])));
    expect(result.content.map((b) => b.type)).toEqual(['text', 'tool-call']);
    expect(result.replayState).toBeUndefined();
  });
});

describe('rewriteText', () => {
  const pattern = /sk-[a-z0-9]{6}/g;
  const rewrite = { pattern, replace: '[x]', maxMatchLength: 9 };
  async function* of(chunks: StreamChunk[]) {
    yield* chunks;
  }
  async function collect(stream: AsyncIterable<StreamChunk>) {
    const out: StreamChunk[] = [];
    for await (const chunk of stream) out.push(chunk);
    return out;
  }
  const cutsArb = fc.array(fc.nat({ max: 60 }), { maxLength: 12 });

  it('property: any split of the text into deltas gives the rewrite of the whole text; order kept per block', async () => {
    const text = 'a sk-abc123 b sk-zz9 sk-sk-000000 end sk-qwerty';
    await fc.assert(
      fc.asyncProperty(cutsArb, cutsArb, async (cutsA, cutsB) => {
        const pieces = (s: string, cuts: number[]) => {
          const at = [...new Set(cuts.map((c) => c % (s.length + 1)))].sort((a, b) => a - b);
          const out: string[] = [];
          let last = 0;
          for (const c of [...at, s.length]) {
            out.push(s.slice(last, c));
            last = c;
          }
          return out;
        };
        const a = pieces(text, cutsA).map((t): StreamChunk => ({ type: 'text-delta', index: 0, text: t }));
        const b = pieces(text, cutsB).map((t): StreamChunk => ({ type: 'reasoning-delta', index: 1, text: t }));
        const mixed: StreamChunk[] = [];
        for (let i = 0; i < Math.max(a.length, b.length); i++) mixed.push(...(a[i] ? [a[i]!] : []), ...(b[i] ? [b[i]!] : []));
        const out = await collect(rewriteText(of([...mixed, { type: 'block-end', index: 0 }, { type: 'finish', finish: { kind: 'stop' } }]), rewrite));
        const expected = text.replace(pattern, '[x]');
        const textOut = out
          .filter((c) => c.type === 'text-delta')
          .map((c) => (c as { text: string }).text)
          .join('');
        expect(textOut).toBe(expected);
        expect(
          out
            .filter((c) => c.type === 'reasoning-delta')
            .map((c) => (c as { text: string }).text)
            .join(''),
        ).toBe(expected);
        // Held text of block 0 precedes its block-end; the finish is last.
        expect(out.findIndex((c) => c.type === 'block-end')).toBeGreaterThan(out.map((c) => c.type === 'text-delta').lastIndexOf(true));
        expect(out.at(-1)!.type).toBe('finish');
        expect(out.some((c) => (c.type === 'text-delta' || c.type === 'reasoning-delta') && c.text === '')).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  it('a block-end still repeating the text (an older adapter) is rewritten too; blocks can be chosen', async () => {
    const out = await collect(
      rewriteText(
        of([
          { type: 'text-delta', index: 0, text: 'sk-abc' },
          { type: 'text-delta', index: 0, text: '123' },
          { type: 'block-end', index: 0, block: { type: 'text', text: 'sk-abc123' } },
          { type: 'reasoning-delta', index: 1, text: 'sk-abc123' },
          { type: 'finish', finish: { kind: 'stop' } },
        ]),
        { ...rewrite, blocks: ['text'] },
      ),
    );
    expect(out).toEqual([
      { type: 'text-delta', index: 0, text: '[x]' },
      { type: 'block-end', index: 0, block: { type: 'text', text: '[x]' } },
      { type: 'reasoning-delta', index: 1, text: 'sk-abc123' },
      { type: 'finish', finish: { kind: 'stop' } },
    ]);
  });

  it('refuses a maxMatchLength that is not a positive integer', () => {
    expect(() => rewriteText(of([]), { ...rewrite, maxMatchLength: 0 })).toThrow(/maxMatchLength/);
  });
});

describe('the scripted adapter follows the block rule', () => {
  it('block-end carries no text or arguments; a delta-rewriting middleware reaches the message and the journal whole', async () => {
    const { createTestHarness, runTurn } = await import('../../testing/index.ts');
    const { readFileSync } = await import('node:fs');
    // A middleware that rewrites each delta on its own (no holding back): only correct when block-end repeats nothing.
    const mask = map((chunk) => (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta' ? [{ ...chunk, text: chunk.text.replaceAll('TOPSECRET', '[masked]') }] : [chunk]));
    const seen: StreamChunk[] = [];
    const test = await createTestHarness({
      script: [{ reasoning: 'the code is TOPSECRET', text: 'It is TOPSECRET.', toolCalls: [{ name: 'unknown_tool', arguments: { a: 1 } }] }, { text: 'done' }],
      scripted: { fragmentChars: 1000 },
      plugins: [
        {
          plugin: definePlugin({
            name: 'mask',
            setup: (ctx) =>
              void ctx.on('llm/stream', (request, next) => {
                const masked = mask(next(request));
                return (async function* () {
                  for await (const chunk of masked) {
                    seen.push(chunk);
                    yield chunk;
                  }
                })();
              }),
          }),
        },
      ],
    });
    try {
      const turn = await runTurn(test, 'go');
      const ends = seen.filter((c) => c.type === 'block-end');
      expect(ends.length).toBeGreaterThanOrEqual(3);
      for (const end of ends) expect(end.block).toBeUndefined();
      const first = turn.events.find((e) => e.type === 'assistant/message')!.data as { message: { content: readonly unknown[] } };
      expect(first.message.content.slice(0, 2)).toEqual([
        { type: 'reasoning', text: 'the code is [masked]' },
        { type: 'text', text: 'It is [masked].' },
      ]);
      const journal = readFileSync(turn.session.path!, 'utf8');
      expect(journal).toContain('[masked]');
      expect(journal).not.toContain('TOPSECRET');
    } finally {
      await test.dispose();
    }
  });
});
