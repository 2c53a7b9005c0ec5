import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { layers, layerTable } from '../../bench/stream/profile-summary.ts';

/** A `.cpuprofile` as the inspector writes it: one node per function, a sample id per tick, µs between ticks. */
function profile(ticks: readonly (readonly [functionName: string, url: string, micros: number])[]): object {
  const frames = [...new Map(ticks.map(([functionName, url]) => [`${functionName} ${url}`, { functionName, url }])).values()];
  const nodes = [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 }, children: frames.map((_, i) => i + 2) },
    ...frames.map((frame, i) => ({ id: i + 2, callFrame: { ...frame, lineNumber: 0 } })),
  ];
  const idOf = (functionName: string, url: string) => frames.findIndex((f) => f.functionName === functionName && f.url === url) + 2;
  // A sample's time is the gap to the next one: the deltas are shifted by one.
  return { nodes, samples: ticks.map(([f, u]) => idOf(f, u)), timeDeltas: [0, ...ticks.map(([, , micros]) => micros)] };
}

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function write(name: string, content: object): string {
  dir ??= mkdtempSync(join(tmpdir(), 'profile-summary-'));
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(content));
  return file;
}

describe('profile-summary --layers', () => {
  it('splits busy time by where each sampled function is defined, idle left out', () => {
    const file = write(
      'loop-openai-1.cpuprofile',
      profile([
        ['append', 'file:///w/runtime/session/writer.ts', 2000],
        ['push', 'file:///w/plugins/llm-openai/chat.ts', 500],
        ['iterSSEChunks', 'file:///w/node_modules/openai/core/streaming.mjs', 1500],
        ['onBody', 'node:internal/deps/undici/undici', 700],
        ['enqueue', 'node:internal/webstreams/readablestream', 300],
        ['(idle)', '', 90_000],
        ['(garbage collector)', '', 400],
        ['append', 'file:///w/runtime/session/writer.ts', 1000],
      ]),
    );
    expect(Object.fromEntries(layers(file))).toEqual({
      'runtime (runtime/)': 3,
      'plugins (plugins/)': 0.5,
      'openai SDK': 1.5,
      'HTTP: undici, llhttp': 0.7,
      'web streams, text decoding': 0.3,
      'V8: (garbage collector)': 0.4,
    });
  });

  it('puts the V8 rows under 1% of every column into one row, and totals each column', () => {
    const many = Array.from({ length: 50 }, (_, i) => [`builtin${i}`, '', 20] as const);
    const raw = write('raw-openai-2.cpuprofile', profile([['iterSSEChunks', 'file:///w/node_modules/openai/core/streaming.mjs', 10_000], ...many]));
    const loop = write(
      'loop-openai-3.cpuprofile',
      profile([['iterSSEChunks', 'file:///w/node_modules/openai/core/streaming.mjs', 10_000], ['append', 'file:///w/runtime/session/writer.ts', 5_000], ...many]),
    );
    const lines = layerTable([raw, loop]);
    expect(lines[0]).toMatch(/^layer, busy ms\s+raw-openai\s+loop-openai$/);
    const row = (name: string) =>
      lines
        .find((line) => line.startsWith(name))
        ?.slice(30)
        .trim()
        .split(/\s+/)
        .map(Number);
    expect(row('openai SDK')).toEqual([10, 10]);
    expect(row('runtime (runtime/)')).toEqual([0, 5]);
    expect(row('V8: the rest')).toEqual([1, 1]); // 50 × 20 µs
    expect(lines.filter((line) => line.startsWith('V8: builtin'))).toEqual([]);
    expect(row('busy in all')).toEqual([11, 16]);
  });
});
