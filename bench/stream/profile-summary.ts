/**
 * Summarises a `.cpuprofile` (node --cpu-prof, or BENCH_STREAM_CPU_PROFILE): self time per
 * function (with its file and line), the top N, as a share of the sampled time:
 * `node --import tsx profile-summary.ts <file> [N]`. With `--layers`, busy time (idle left out) in
 * ms per layer of the stack, side by side for each file given — e.g. the raw SDK's profile and the
 * agent loop's, from one run: `node --import tsx profile-summary.ts --layers raw.cpuprofile loop.cpuprofile`.
 */
import { readFileSync } from 'node:fs';
import { basename, relative } from 'node:path';
import { isMain } from '../support.ts';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly hitCount?: number;
}

interface Profile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  /** µs since the previous sample; the first is from the profile's start. */
  readonly timeDeltas: number[];
}

/** The layers `--layers` splits a profile into, first match wins. */
const LAYERS: readonly (readonly [string, RegExp])[] = [
  ['runtime (runtime/)', /\/runtime\//],
  ['plugins (plugins/)', /\/plugins\//],
  ['bench code (bench/)', /\/bench\/(?!node_modules)/],
  ['openai SDK', /node_modules\/openai\//],
  ['@anthropic-ai/sdk', /node_modules\/@anthropic-ai\/sdk\//],
  ['other packages', /node_modules\//],
  ['HTTP: undici, llhttp', /^node:internal\/deps\/undici|^wasm:/],
  ['web streams, text decoding', /^node:internal\/(webstreams|encoding)/],
  ['other Node internals', /^node:/],
];

/**
 * Busy ms per layer (idle left out): self time of each sampled function, by where it is defined.
 * Samples in V8's own functions (no URL: the GC, microtask runs, builtins) are grouped by name.
 */
export function layers(file: string): Map<string, number> {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const out = new Map<string, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const { functionName, url } = byId.get(profile.samples[i]!)!.callFrame;
    if (functionName === '(idle)') continue;
    const micros = profile.timeDeltas[i + 1] ?? 0; // a sample's time is the gap to the next one
    const layer = url === '' ? `V8: ${functionName || '(anonymous)'}` : (LAYERS.find(([, test]) => test.test(url))?.[0] ?? 'other');
    out.set(layer, (out.get(layer) ?? 0) + micros / 1000);
  }
  return out;
}

/** The `--layers` table: a row per layer (the larger ones first; V8 rows under 1% of the busy time as one), a column of ms per file. */
export function layerTable(files: readonly string[]): string[] {
  const columns = files.map(layers);
  const totals = columns.map((column) => [...column.values()].reduce((sum, ms) => sum + ms, 0));
  // Decided on every column before any is changed.
  const small = [...new Set(columns.flatMap((column) => [...column.keys()]))].filter((name) => name.startsWith('V8: ') && columns.every((column, j) => (column.get(name) ?? 0) < totals[j]! / 100));
  for (const column of columns) {
    let rest = 0;
    for (const name of small) {
      rest += column.get(name) ?? 0;
      column.delete(name);
    }
    if (rest > 0) column.set('V8: the rest', rest);
  }
  const sum = (name: string) => columns.reduce((total, column) => total + (column.get(name) ?? 0), 0);
  const names = [...new Set(columns.flatMap((column) => [...column.keys()]))].sort((a, b) => sum(b) - sum(a));
  const cell = (text: string) => text.padStart(16);
  const label = (file: string) =>
    basename(file)
      .replace(/\.cpuprofile$/, '')
      .replace(/-\d+$/, '')
      .slice(0, 15);
  return [
    `${'layer, busy ms'.padEnd(30)}${files.map((file) => cell(label(file))).join('')}`,
    ...names.map((name) => `${name.slice(0, 29).padEnd(30)}${columns.map((column) => cell((column.get(name) ?? 0).toFixed(0))).join('')}`),
    `${'busy in all'.padEnd(30)}${totals.map((total) => cell(total.toFixed(0))).join('')}`,
  ];
}

export function summarise(file: string, top = 25): string[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
  const hits = new Map<number, number>();
  for (const sample of profile.samples) hits.set(sample, (hits.get(sample) ?? 0) + 1);
  const byFunction = new Map<string, number>();
  for (const node of profile.nodes) {
    const count = hits.get(node.id) ?? 0;
    if (count === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url.startsWith('file://') ? relative(process.cwd(), new URL(url).pathname) : url || '(native)';
    const key = `${functionName || '(anonymous)'} ${where}${lineNumber > 0 ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + count);
  }
  const total = profile.samples.length;
  return [...byFunction.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, count]) => `${((100 * count) / total).toFixed(1).padStart(5)}%  ${key}`);
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const lines = args[0] === '--layers' ? layerTable(args.slice(1)) : summarise(args[0]!, Number(args[1] ?? 25));
  for (const line of lines) console.log(line);
}
