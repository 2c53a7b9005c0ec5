import OpenAI from 'openai';
const S = JSON.parse(process.argv[2]!);
const client = new OpenAI({ apiKey: 'k', baseURL: S.openai.url, maxRetries: 0 });
const n = S.openai.eventCount;
function spin(us: number) { const end = performance.now() + us / 1000; while (performance.now() < end); }
async function once(delayUs: number) {
  const c0 = process.cpuUsage();
  const s = await client.chat.completions.create({ model: 'x', messages: [], stream: true });
  let k = 0; let spinCpu = 0;
  for await (const _e of s) { k++; if (delayUs) { const a = process.cpuUsage(); spin(delayUs); const b = process.cpuUsage(a); spinCpu += b.user + b.system; } }
  const c = process.cpuUsage(c0);
  return (c.user + c.system - spinCpu) / n;
}
for (let i = 0; i < 2; i++) await once(0);
for (let r = 0; r < 3; r++) for (const d of [0, 5, 15, 30]) { (globalThis as any).gc(); console.log('delay', d, 'sdk µs/event (excl. spin)', (await once(d)).toFixed(1)); }
process.exit(0);
