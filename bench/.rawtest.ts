import Anthropic from '@anthropic-ai/sdk';
const S = JSON.parse(process.argv[2]!);
const client = new Anthropic({ apiKey: 'k', baseURL: S.anthropic.url, maxRetries: 0 });
const variant = process.argv[3];
async function once() {
  const body: any = variant === 'plain' ? { model: 'claude-sonnet-4-20250514', max_tokens: 4096, messages: [{ role: 'user', content: 'hi' }], stream: true }
    : { model: 'claude-sonnet-4-20250514', max_tokens: 4096, thinking: { type: 'enabled', budget_tokens: 2048 }, messages: [{ role: 'user', content: 'hi' }], stream: true };
  const opts = variant === 'signal' ? { signal: new AbortController().signal } : undefined;
  const c0 = process.cpuUsage();
  const stream = await client.messages.create(body, opts);
  let n = 0;
  for await (const _e of stream) n++;
  const c = process.cpuUsage(c0);
  return ((c.user + c.system) / 20013).toFixed(1);
}
const out = [];
for (let i = 0; i < 5; i++) { (globalThis as any).gc?.(); out.push(await once()); }
console.log(variant, out.join(' '));
process.exit(0);
