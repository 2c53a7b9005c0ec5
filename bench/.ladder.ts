import { rawContender, harnessRig, passThrough } from './stream/contenders.ts';
import { BlockAssembler } from '../runtime/llm/assembler.ts';
import { createJournal } from '../runtime/session/journal.ts';
const S = JSON.parse(process.argv[2]!);
const st = (process.argv[3] ?? 'anthropic') as 'anthropic' | 'openai';
const raw = rawContender(S);
const rig = await harnessRig(S, 0);
const h = rig.harness;
const provider = st === 'openai' ? 'bench-openai' : 'bench-anthropic';
const model = st === 'openai' ? 'gpt-4o-2024-08-06' : 'claude-sonnet-4-20250514';
const reg = h.llm.registry.lookup(provider)!;
const opts = () => ({ provider, model, messages: [], signal: new AbortController().signal });
let sid = 0;
const steps: Record<string, () => Promise<void>> = {
  raw: async () => { await raw[st](); },
  adapter: async () => { for await (const _c of reg.adapter.stream(opts() as any)) {} },
  service: async () => { for await (const _c of h.llm.stream(opts() as any)) {} },
  assembler: async () => { const a = new BlockAssembler(); for await (const c of h.llm.stream(opts() as any)) a.push(c); a.result(); },
  journal: async () => { const j = await createJournal({ dataDir: rig.dataDir, id: 'l' + sid++, bus: h.kernel.bus }); await j.checkpoint(); const a = new BlockAssembler(); for await (const c of h.llm.stream(opts() as any)) { a.push(c); const r = j.append('assistant/chunk', { turn: 1, step: 1, chunk: c }); if (r instanceof Promise) await r; } a.result(); await j.checkpoint(); await j.close(); },
};
const withMw = async () => { for (let i = 0; i < 3; i++) h.ctx.on('llm/stream', passThrough as never); };
const n = S[st].eventCount;
const res: Record<string, number[]> = {};
const order = Object.keys(steps);
for (let i = 0; i < 3; i++) for (const k of order) await steps[k]!();
for (let i = 0; i < 6; i++) for (const k of order) { (globalThis as any).gc?.(); const c0 = process.cpuUsage(); await steps[k]!(); const c = process.cpuUsage(c0); (res[k] ??= []).push((c.user + c.system) / n); }
await withMw();
for (let i = 0; i < 2; i++) await steps.journal!();
for (let i = 0; i < 6; i++) for (const k of ['raw', 'journal']) { (globalThis as any).gc?.(); const c0 = process.cpuUsage(); await steps[k]!(); const c = process.cpuUsage(c0); (res[k + (k === 'journal' ? '+3mw' : '2')] ??= []).push((c.user + c.system) / n); }
const med = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
for (const [k, v] of Object.entries(res)) console.log(k.padEnd(12), med(v).toFixed(1), v.map((x) => x.toFixed(0)).join(' '));
await rig.close();
process.exit(0);
