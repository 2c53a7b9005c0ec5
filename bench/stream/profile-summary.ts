/**
 * Summarises a `.cpuprofile` (node --cpu-prof): self time per function (with its file and line),
 * the top N, as a share of the sampled time. `node --import tsx profile-summary.ts <file> [N]`.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { isMain } from '../support.ts';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly hitCount?: number;
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

if (isMain(import.meta.url)) for (const line of summarise(process.argv[2]!, Number(process.argv[3] ?? 25))) console.log(line);
