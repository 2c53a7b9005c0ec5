import { rawContender, harnessRig } from './stream/contenders.ts';
const S = JSON.parse(process.argv[2]!);
const st = (process.argv[3] ?? 'anthropic') as 'anthropic' | 'openai';
const raw = rawContender(S);
const rig = await harnessRig(S);
const n = S[st].eventCount;
const res: Record<string, string[]> = { raw: [], harness: [] };
for (let i = 0; i < 8; i++) {
  for (const [name, fn] of [['raw', raw[st]], ['harness', rig.consume[st]]] as const) {
    (globalThis as any).gc?.();
    const c0 = process.cpuUsage();
    await fn();
    const c = process.cpuUsage(c0);
    res[name]!.push(((c.user + c.system) / n).toFixed(1));
  }
}
console.log(JSON.stringify(res));
await rig.close();
process.exit(0);
