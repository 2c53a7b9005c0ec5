/**
 * Where the agent loop's time goes per event (issue 22): one turn of `session.run` fed by an
 * in-memory SDK stream (the recorded events, already parsed, a turn of the event loop before each,
 * as in bench/stream/layers.ts), repeated; the turns after the first (a warm-up) are profiled with
 * the inspector's CPU profiler and the profile written to `<out>`; read it with
 * bench/stream/profile-summary.ts:
 *
 *   node --import tsx bench/stream/profile.ts anthropic 5 /tmp/loop.cpuprofile
 *   node --import tsx bench/stream/profile-summary.ts /tmp/loop.cpuprofile
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { splitSseFrames } from '../../test/support/fixture-server.ts';
import { envInt, isMain } from '../support.ts';
import { allowAll, harnessRig, type Served } from './contenders.ts';
import { repeatedBody, STREAMS, type StreamName } from './server.ts';

async function main(name: StreamName, turns: number, out: string): Promise<void> {
  const inspector = new Session();
  inspector.connect();
  await inspector.post('Profiler.enable');
  const { body } = repeatedBody(STREAMS[name], envInt('BENCH_STREAM_CHUNKS', 20_000));
  const events: unknown[] = [];
  for (const frame of splitSseFrames(body)) {
    const match = /^data: (.*)$/m.exec(frame);
    if (match === null || match[1] === '[DONE]') continue;
    const event = JSON.parse(match[1]!) as { type?: string };
    if (event.type !== 'ping') events.push(event);
  }
  const nowhere = { url: 'http://127.0.0.1:9/v1', root: 'http://127.0.0.1:9', eventCount: 0, bytes: 0, repeat: 1 };
  // The loop as it ships (no llm/stream middleware); BENCH_PROFILE_MIDDLEWARES=3 adds the bench's pass-through ones.
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
  try {
    for (let i = 0; i < turns; i++) {
      if (i === 1) await inspector.post('Profiler.start');
      const session = await rig.harness.createSession({ maxSteps: 1 });
      const before = process.cpuUsage();
      let count = 0;
      for await (const _event of session.run('hi', { provider, model, approve: allowAll, ...(name.startsWith('anthropic') ? { reasoningEffort: 'low' } : {}) })) count++;
      const used = process.cpuUsage(before);
      await session.close();
      process.stderr.write(`turn ${i + 1}: ${count} loop events, ${((used.user + used.system) / events.length).toFixed(2)} µs CPU per SDK event\n`);
    }
    const { profile } = await inspector.post('Profiler.stop');
    writeFileSync(out, JSON.stringify(profile));
  } finally {
    await rig.close();
  }
}

if (isMain(import.meta.url)) {
  await main((process.argv[2] ?? 'anthropic') as StreamName, Number(process.argv[3] ?? 5), process.argv[4] ?? 'loop.cpuprofile');
  process.exit(0);
}
