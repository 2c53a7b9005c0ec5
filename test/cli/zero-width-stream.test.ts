/**
 * The spinner of a renderer given a terminal stream that did not come from `processIo()` (an Io of
 * an embedder's or a test's) that reports 0 columns: ora counted a line as ⌈width ÷ 0⌉ = Infinity
 * rows and cleared upwards forever. The renderer takes the stream through cli/env.ts's size rule
 * itself (80 × 24 for a terminal that reports 0), so it clears the rows it drew and the turn goes on.
 * (test/cli/zero-width.test.ts shows the same for `harness run` in a real 0 × 0 terminal.)
 */
import { Writable } from 'node:stream';
import pc from 'picocolors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Io } from '../../cli/env.ts';
import { LiveRenderer } from '../../cli/render.ts';

/** Cursor calls past this many mean the spinner is clearing rows that were never drawn. */
const CURSOR_CALL_LIMIT = 10_000;

/** A stream that says it is a 0 × 0 terminal and counts the spinner's cursor moves. */
function zeroSizeTerminal(): NodeJS.WriteStream & { written: () => string; cursorCalls: () => number } {
  let text = '';
  let calls = 0;
  const count = () => {
    if (++calls > CURSOR_CALL_LIMIT) throw new Error(`more than ${CURSOR_CALL_LIMIT} cursor moves: the spinner clears an endless number of rows`);
    return true;
  };
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  }) as unknown as NodeJS.WriteStream & { written: () => string; cursorCalls: () => number };
  Object.assign(stream, {
    isTTY: true,
    columns: 0,
    rows: 0,
    moveCursor: count,
    clearLine: count,
    cursorTo: count,
    clearScreenDown: count,
    written: () => text,
    cursorCalls: () => calls,
  });
  return stream;
}

// ora draws only in what it takes for an interactive terminal: not under CI, not TERM=dumb.
const saved = { CI: process.env.CI, TERM: process.env.TERM };
beforeEach(() => {
  delete process.env.CI;
  process.env.TERM = 'xterm-256color';
});
afterEach(() => {
  for (const [key, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  }
});

describe('a renderer on a 0-column terminal stream of its own', () => {
  it('shows and clears its spinner in a bounded number of rows, then streams the reply', () => {
    const terminal = zeroSizeTerminal();
    const io: Io = { out: terminal, err: terminal, c: pc, interactive: true };
    const renderer = new LiveRenderer(io);
    renderer.event({ seq: 1, type: 'step/start', atMs: 0, data: { turn: 1, step: 1 } } as never);
    renderer.event({ seq: 2, type: 'assistant/chunk', atMs: 0, data: { turn: 1, step: 1, chunk: { type: 'block-start', index: 0, blockType: 'text' } } } as never);
    renderer.event({ seq: 3, type: 'assistant/chunk', atMs: 0, data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'Hello there.' } } } as never);
    renderer.finish();
    expect(terminal.columns).toBe(80);
    expect(terminal.rows).toBe(24);
    expect(terminal.cursorCalls()).toBeGreaterThan(0); // the spinner was drawn and cleared
    expect(terminal.cursorCalls()).toBeLessThan(100);
    expect(terminal.written()).toContain('thinking…');
    expect(terminal.written()).toContain('Hello there.');
  });
});
