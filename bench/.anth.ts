import Anthropic from '@anthropic-ai/sdk';
import { harnessRig } from './stream/contenders.ts';
const S = JSON.parse(process.argv[2]!);
const n = S.anthropic.eventCount;
const client = new Anthropic({ apiKey: 'k', baseURL: S.anthropic.url, maxRetries: 0 });
const rig = await harnessRig(S, 0);
const reg = rig.harness.llm.registry.lookup('bench-anthropic')!;
const body = { model: 'claude-sonnet-4-20250514', max_tokens: 4096, messages: [{ role: 'user' as const, content: 'hi' }], stream: true as const };
const steps: Record<string, () => Promise<void>> = {
  raw: async () => { const s = await client.messages.create(body); for await (const _ of s) {} },
  rawSignal: async () => { const s = await client.messages.create(body, { signal: new AbortController().signal }); for await (const _ of s) {} },
  rawManual: async () => { const s = await client.messages.create(body); const it = s[Symbol.asyncIterator](); while (!(await it.next()).done) {} },
  adapter: async () => { for await (const _c of reg.adapter.stream({ provider: 'bench-anthropic', model: body.model, messages: [] } as any)) {} },
};
const res: Record<string, number[]> = {};
for (let i = 0; i < 2; i++) for (const k in steps) await steps[k]!();
for (let i = 0; i < 8; i++) for (const k in steps) { (globalThis as any).gc?.(); const c0 = process.cpuUsage(); await steps[k]!(); const c = process.cpuUsage(c0); (res[k] ??= []).push((c.user + c.system) / n); }
const med = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
for (const [k, v] of Object.entries(res)) console.log(k.padEnd(12), med(v).toFixed(1), v.map((x) => x.toFixed(0)).join(' '));
await rig.close(); process.exit(0);
