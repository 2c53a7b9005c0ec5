import { rawContender, harnessRig } from './stream/contenders.ts';
const S = JSON.parse(process.argv[2]!);
const st = (process.argv[3] ?? 'anthropic') as 'anthropic' | 'openai';
const which = process.argv[4] ?? 'harness';
const rig = which === 'harness' ? await harnessRig(S) : undefined;
const fn = rig ? rig.consume[st] : rawContender(S)[st];
for (let i = 0; i < 6; i++) await fn();
await rig?.close();
process.exit(0);
