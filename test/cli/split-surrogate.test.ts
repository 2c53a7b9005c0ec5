/**
 * The live renderer on deltas that split a character: any adapter may cut its text by UTF-16 unit
 * (the scripted model did), sending an emoji's high surrogate at the end of one delta and the low one
 * at the start of the next. Each half written alone reaches the terminal as U+FFFD (`��`); the
 * renderer holds a trailing high surrogate until the next delta, so the emoji prints whole.
 */
import { Writable } from 'node:stream';
import pc from 'picocolors';
import { describe, expect, it } from 'vitest';
import type { Io } from '../../cli/env.ts';
import { PrintableStream } from '../../cli/format.ts';
import { LiveRenderer } from '../../cli/render.ts';

/** A pipe that keeps each write as the bytes a terminal gets (UTF-8, as Node encodes a string write). */
function pipe(): NodeJS.WriteStream & { text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    decodeStrings: true,
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  }) as unknown as NodeJS.WriteStream & { text: () => string };
  stream.text = () => Buffer.concat(chunks).toString('utf8');
  return stream;
}

function render(blockType: 'text' | 'reasoning', deltas: readonly string[]): string {
  const out = pipe();
  const io: Io = { out, err: pipe(), c: pc.createColors(false), interactive: false };
  const renderer = new LiveRenderer(io);
  let seq = 1;
  const chunk = (chunk: unknown) => renderer.event({ seq: seq++, type: 'assistant/chunk', atMs: 0, data: { turn: 1, step: 1, chunk } } as never);
  chunk({ type: 'block-start', index: 0, blockType });
  for (const text of deltas) chunk({ type: `${blockType}-delta`, index: 0, text });
  chunk({ type: 'block-end', index: 0 });
  renderer.finish();
  return out.text();
}

describe('a surrogate pair split across two deltas', () => {
  it('prints the emoji whole in a text block (before: two U+FFFD)', () => {
    const text = render('text', ['héllo \ud83c', '\udf89 there']);
    expect(text).toContain('héllo 🎉 there');
    expect(text).not.toContain('\ufffd');
  });

  it('prints the emoji whole in a reasoning block, split over three deltas', () => {
    const text = render('reasoning', ['ok \ud83c', '\udf89', ' \ud83d', '\udc4d']);
    expect(text).toContain('ok 🎉 👍');
    expect(text).not.toContain('\ufffd');
  });

  it('still writes a high surrogate that no low one follows, at the end of the block', () => {
    const stream = new PrintableStream();
    expect(stream.push('a\ud83c')).toBe('a');
    expect(stream.flush()).toBe('\ud83c');
    expect(stream.flush()).toBe('');
  });

  it('keeps holding a CR for a CRLF split across deltas', () => {
    const stream = new PrintableStream();
    expect(stream.push('line\r') + stream.push('\nnext')).toBe('line\nnext');
  });
});
