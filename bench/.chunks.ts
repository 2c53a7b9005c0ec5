import OpenAI from 'openai';
const S = JSON.parse(process.argv[2]!);
let sizes: number[] = [];
const myFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  const reader = res.body!.getReader();
  const body = new ReadableStream({ async pull(c) { const r = await reader.read(); if (r.done) c.close(); else { sizes.push(r.value.length); c.enqueue(r.value); } } });
  return new Response(body, { status: res.status, headers: res.headers });
};
const client = new OpenAI({ apiKey: 'k', baseURL: S.openai.url, maxRetries: 0, fetch: myFetch });
function spin(us: number) { const end = performance.now() + us / 1000; while (performance.now() < end); }
for (const d of [0, 0, 10, 30, 60]) {
  sizes = [];
  const s = await client.chat.completions.create({ model: 'x', messages: [], stream: true });
  for await (const _e of s) if (d) spin(d);
  const avg = sizes.reduce((a, b) => a + b, 0) / sizes.length;
  console.log('delay', d, 'reads', sizes.length, 'avg bytes', avg.toFixed(0), 'max', Math.max(...sizes));
}
process.exit(0);
