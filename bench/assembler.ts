/**
 * Assembler benchmark (issue #3 "Benchmark"): assemble one 100k-delta stream — reasoning, text and
 * tool-call blocks, each framed by block-start / block-end, token-sized fragments, a usage chunk now
 * and then — through `BlockAssembler` (push every chunk, then `result()`), against the plain loop a
 * programmer would write without it: switch on the chunk type and `+=` each fragment into a
 * per-index string.
 *
 * Run: `npx tsx bench/assembler.ts` (or `npm run bench -- assembler`). After a warm-up, several
 * interleaved repetitions (assembler, plain, assembler, plain, …), each assembling the whole stream
 * once, in process CPU time; the median of each is reported, and the median of the per-repetition
 * ratios. Target (issue): ≤ 1.5x.
 */
import { BlockAssembler } from '../runtime/llm/assembler.ts';
import type { ContentBlock, StreamChunk } from '../runtime/llm/types.ts';
import { check, collectGarbage, isMain, measureCpu, median, printResult, ratioSpread, round, stat, type BenchResult } from './support.ts';

const DELTAS = 100_000;
const REPETITIONS = 21;
const WARMUP = 10;
/** Fragments per block: one "turn" is a reasoning, a text and two tool-call blocks. */
const REASONING_DELTAS = 400;
const TEXT_DELTAS = 300;
const TOOL_DELTAS = 150;

/** Token-sized fragments, deterministic (no Math.random: every run measures the same stream). */
function fragments(count: number, seed: number, json: boolean): string[] {
  const words = json
    ? ['{"path":', '"src/', 'index', '.ts"', ',"line', 's":[', '1,', '2', ']}', ' ', '"text":"', 'hello ', 'wor', 'ld\\n"']
    : ['The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.', ' Then', ' it', ' rests', ',', ' 漢字', ' 🙂', '\n'];
  const out: string[] = [];
  let state = seed >>> 0;
  for (let i = 0; i < count; i++) {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    out.push(words[state % words.length]!);
  }
  return out;
}

/** The stream: turns of reasoning, text and two tool calls, until DELTAS deltas were made. */
export function makeStream(deltaCount = DELTAS): { chunks: StreamChunk[]; deltaCount: number } {
  const chunks: StreamChunk[] = [];
  let deltas = 0;
  let index = 0;
  let seed = 1;
  const block = (kind: 'reasoning' | 'text' | 'tool-call', wanted: number) => {
    const count = Math.min(wanted, deltaCount - deltas);
    if (count <= 0) return;
    const pieces = fragments(count, seed++, kind === 'tool-call');
    const id = `call_${index}`;
    chunks.push(kind === 'tool-call' ? { type: 'block-start', index, blockType: kind, id, name: 'read_file' } : { type: 'block-start', index, blockType: kind });
    for (let i = 0; i < pieces.length; i++) {
      if (kind === 'tool-call') chunks.push(i === 0 ? { type: 'tool-call-delta', index, id, name: 'read_file', arguments: pieces[i] } : { type: 'tool-call-delta', index, arguments: pieces[i] });
      else chunks.push({ type: kind === 'text' ? 'text-delta' : 'reasoning-delta', index, text: pieces[i]! });
      if ((deltas + i) % 5_000 === 4_999) chunks.push({ type: 'usage', usage: { outputTokens: deltas + i + 1 } });
    }
    const all = pieces.join('');
    const final: ContentBlock = kind === 'tool-call' ? { type: 'tool-call', id, name: 'read_file', arguments: all } : { type: kind, text: all };
    chunks.push({ type: 'block-end', index, block: final });
    deltas += count;
    index++;
  };
  while (deltas < deltaCount) {
    block('reasoning', REASONING_DELTAS);
    block('text', TEXT_DELTAS);
    block('tool-call', TOOL_DELTAS);
    block('tool-call', TOOL_DELTAS);
  }
  chunks.push({ type: 'usage', usage: { inputTokens: 1234, outputTokens: deltaCount } });
  chunks.push({ type: 'finish', finish: { kind: 'tool-calls' } });
  return { chunks, deltaCount: deltas };
}

/** BlockAssembler over the stream; returns a checksum of what it built. */
function viaAssembler(chunks: readonly StreamChunk[]): number {
  const assembler = new BlockAssembler();
  for (let i = 0; i < chunks.length; i++) assembler.push(chunks[i]!);
  const result = assembler.result();
  let total = 0;
  for (const block of result.content) total += block.type === 'tool-call' ? block.arguments.length : block.type === 'text' || block.type === 'reasoning' ? block.text.length : 0;
  return total;
}

/** The plain loop: switch on the type, `+=` each fragment into a per-index string. */
function viaConcat(chunks: readonly StreamChunk[]): number {
  const texts: string[] = [];
  for (let i = 0; i < chunks.length; i++) {
    const chunk = chunks[i]!;
    switch (chunk.type) {
      case 'block-start':
        texts[chunk.index] = '';
        break;
      case 'text-delta':
      case 'reasoning-delta':
        texts[chunk.index] += chunk.text;
        break;
      case 'tool-call-delta':
        if (chunk.arguments !== undefined) texts[chunk.index] += chunk.arguments;
        break;
      default:
        break;
    }
  }
  let total = 0;
  for (const text of texts) total += text.length;
  return total;
}

export async function run(): Promise<BenchResult> {
  const { chunks, deltaCount } = makeStream();
  const expected = viaConcat(chunks);
  if (viaAssembler(chunks) !== expected) throw new Error('bench self-check failed: the assembler and the plain loop built different text');
  for (let i = 0; i < WARMUP; i++) {
    viaAssembler(chunks);
    viaConcat(chunks);
  }
  const assembler: number[] = [];
  const concat: number[] = [];
  const ratios: number[] = [];
  for (let rep = 0; rep < REPETITIONS; rep++) {
    // Alternate which side runs first, so neither always follows the other's garbage.
    const order = rep % 2 === 0 ? ([viaAssembler, viaConcat] as const) : ([viaConcat, viaAssembler] as const);
    const ms = new Map<unknown, number>();
    for (const fn of order) {
      collectGarbage();
      const { cpuUs, value } = measureCpu(() => fn(chunks));
      if (value !== expected) throw new Error('bench self-check failed during timing');
      ms.set(fn, cpuUs / 1000);
    }
    assembler.push(ms.get(viaAssembler)!);
    concat.push(ms.get(viaConcat)!);
    ratios.push(ms.get(viaAssembler)! / ms.get(viaConcat)!);
  }
  const a = median(assembler);
  const c = median(concat);
  const r = median(ratios);
  const row = (label: string, values: number[], ms: number) => ({
    contender: label,
    'CPU ms (median)': round(ms),
    'ns/delta': round((ms * 1e6) / deltaCount),
    'min–max ms': `${round(Math.min(...values))}–${round(Math.max(...values))}`,
    'ratio to plain loop': label.startsWith('plain') ? '1.00x (baseline)' : ratioSpread(stat(ratios)),
  });
  return {
    name: 'assembler',
    summary: 'BlockAssembler over a 100k-delta stream vs a plain string-concatenation loop over the same deltas (issue #3)',
    tables: [{ rows: [row('BlockAssembler', assembler, a), row('plain += loop (baseline)', concat, c)] }],
    targets: [check('BlockAssembler / plain += loop (CPU per stream)', ratioSpread(stat(ratios)), '≤ 1.5x', r <= 1.5)],
    notes: [
      `${deltaCount} deltas (${chunks.length} chunks incl. block-start/end, usage, finish): reasoning, text and tool-call fragments`,
      `process CPU time, median of ${REPETITIONS} interleaved repetitions (alternating order) after ${WARMUP} warm-up rounds; each repetition assembles the whole stream once (BlockAssembler includes result()); ratio = median of the per-repetition ratios, range = their min–max`,
    ],
  };
}

if (isMain(import.meta.url)) printResult(await run());
