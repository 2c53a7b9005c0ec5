/**
 * Where the agent loop allocates per event (issue 22): the turns of bench/stream/profile.ts, but
 * under the inspector's sampling heap profiler (every `BENCH_HEAP_INTERVAL` bytes, default 128,
 * counting objects the young and the old GC already collected), turns 2..N. Prints the top
 * allocation sites as bytes per SDK event:
 *
 *   node --import tsx bench/stream/heap-profile.ts openai 4 [top]
 *   node --import tsx bench/stream/heap-profile.ts openai-chat/text-with-include-usage.sse 4
 */
import { Session } from 'node:inspector/promises';
import { relative } from 'node:path';
import { splitSseFrames } from '../../test/support/fixture-server.ts';
import { envInt, isMain } from '../support.ts';
import { allowAll, harnessRig, type Served } from './contenders.ts';
import { repeatedBody, STREAMS, type StreamName } from './server.ts';

interface HeapNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

async function main(name: StreamName, turns: number, top: number, fixture?: string): Promise<void> {
  const inspector = new Session();
  inspector.connect();
  await inspector.post('HeapProfiler.enable');
  const { body } = repeatedBody(fixture ?? STREAMS[name], envInt('BENCH_STREAM_CHUNKS', 20_000));
  const events: unknown[] = [];
  for (const frame of splitSseFrames(body)) {
    const match = /^data: (.*)$/m.exec(frame);
    if (match === null || match[1] === '[DONE]') continue;
    const event = JSON.parse(match[1]!) as { type?: string };
    if (event.type !== 'ping') events.push(event);
  }
  const nowhere = { url: 'http://127.0.0.1:9/v1', root: 'http://127.0.0.1:9', eventCount: 0, bytes: 0, repeat: 1 };
  const rig = await harnessRig({ openai: nowhere, anthropic: nowhere, 'openai-tools': nowhere, 'anthropic-tools': nowhere } as Served, Number(process.env.BENCH_PROFILE_MIDDLEWARES ?? 0));
  const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  async function* sdk(): AsyncGenerator<unknown> {
    for (const event of events) {
      await turn();
      yield event;
    }
  }
  const fake = { messages: { create: async () => sdk() }, chat: { completions: { create: async () => sdk() } } };
  const provider = `bench-${name}`;
  const registration = rig.harness.llm.registry.lookup(provider)!;
  (registration.adapter as unknown as { clients: { get: () => unknown } }).clients.get = () => fake;
  const model = name.startsWith('openai') ? 'gpt-4o-2024-08-06' : 'claude-sonnet-4-20250514';
  const interval = Number(process.env.BENCH_HEAP_INTERVAL ?? 128);
  try {
    for (let i = 0; i < turns; i++) {
      if (i === 1) await inspector.post('HeapProfiler.startSampling', { samplingInterval: interval, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      const session = await rig.harness.createSession({ maxSteps: 1 });
      let count = 0;
      for await (const _event of session.run('hi', { provider, model, approve: allowAll, ...(name.startsWith('anthropic') ? { reasoningEffort: 'low' } : {}) })) count++;
      await session.close();
      process.stderr.write(`turn ${i + 1}: ${count} loop events\n`);
    }
    const { profile } = (await inspector.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: HeapNode } };
    const bySite = new Map<string, number>();
    let total = 0;
    const walk = (node: HeapNode, stack: string): void => {
      const { functionName, url, lineNumber } = node.callFrame;
      const where = url.startsWith('file://') ? relative(process.cwd(), new URL(url).pathname) : url || '(native)';
      const key = `${functionName || '(anonymous)'} ${where}${lineNumber >= 0 ? `:${lineNumber + 1}` : ''}`;
      if (node.selfSize > 0) {
        const full = process.env.BENCH_HEAP_STACK === '1' ? `${key}  <-  ${stack}` : key;
        bySite.set(full, (bySite.get(full) ?? 0) + node.selfSize);
        total += node.selfSize;
      }
      for (const child of node.children) walk(child, key.split(' ')[0] + (stack ? ` < ${stack.split(' < ').slice(0, 3).join(' < ')}` : ''));
    };
    walk(profile.head, '');
    const perEvent = (bytes: number): string => (bytes / ((turns - 1) * events.length)).toFixed(0).padStart(6);
    console.log(`${name}: ${events.length} SDK events per turn; ${perEvent(total)} B allocated per event in all (sampled)`);
    for (const [key, bytes] of [...bySite.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${perEvent(bytes)} B  ${key}`);
  } finally {
    await rig.close();
  }
}

if (isMain(import.meta.url)) {
  // A fixture path (provider-streams/<provider dir>/<file>) instead of a bench stream: its provider's route.
  const [target = 'openai', turns = '4', top = '40'] = process.argv.slice(2);
  const fixture = target.includes('/') ? target : undefined;
  const name = (fixture === undefined ? target : fixture.startsWith('openai') ? 'openai' : 'anthropic') as StreamName;
  await main(name, Number(turns), Number(top), fixture);
  process.exit(0);
}
