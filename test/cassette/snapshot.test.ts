/**
 * `request/snapshot`: per model call the journal holds the request the adapter received (after
 * every `llm/stream` middleware), cheaply (deltas, messages by id), rebuilt exactly on reading.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  canonicalHash,
  canonicalRequest,
  createHarness,
  firstDifference,
  readJournal,
  recordedCalls,
  createAssistantMessage,
  createUserMessage,
  requestHash,
  type AnySessionEvent,
  type GenerateOptions,
  type Harness,
} from '../../runtime/index.ts';
import { RequestRecorder } from '../../runtime/internal.ts';
import { ofType, plugin, tempDir } from '../agent/support.ts';

const demo = join(import.meta.dirname, '../../cookbook/demo-workspace');
let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

async function eventsOf(path: string): Promise<AnySessionEvent[]> {
  const out: AnySessionEvent[] = [];
  for await (const event of readJournal(path)) out.push(event);
  return out;
}

describe('request/snapshot', () => {
  it('records what the adapter received, after the middleware, and rebuilds it exactly', async () => {
    const dir = tempDir('harness-snapshot-');
    harness = await createHarness({
      dataDir: join(dir, 'data'),
      config: {
        defaults: { provider: 'scripted', model: 'scripted-default', system: 'Be brief.' },
        plugins: [{ module: plugin('llm-scripted'), config: { paceMs: 0 } }, { module: plugin('tools-workspace') }, { module: plugin('approvals') }],
      },
    });
    // A middleware that rewrites the request, and an innermost tap that sees what goes on to the route.
    harness.ctx.on('llm/stream', (options, next) => next({ ...options, system: `${options.system} (rewritten)` }));
    const sent: GenerateOptions[] = [];
    harness.kernel.bus.add('llm/stream', (options: GenerateOptions, next: (o: GenerateOptions) => unknown) => (sent.push(options), next(options)) as never, { stage: 1000, owner: 'test' });
    const session = await harness.createSession({ cwd: demo });
    await session.runToEnd('What is in this workspace?', { approve: () => 'allow' });
    await session.runToEnd('And again?', { approve: () => 'allow' });
    await session.close();

    const events = await eventsOf(session.path);
    const snapshots = ofType(events, 'request/snapshot');
    const calls = recordedCalls(events);
    expect(calls.length).toBeGreaterThanOrEqual(3);
    expect(snapshots).toHaveLength(calls.length);
    expect(sent).toHaveLength(calls.length);
    // Each snapshot comes right before its call's first chunk.
    for (const call of calls) expect(events.find((e) => e.seq === call.firstSeq - 1)?.type).toBe('request/snapshot');
    for (const [i, call] of calls.entries()) {
      const recorded = call.request()!;
      expect(recorded.ok).toBe(true);
      if (!recorded.ok) continue;
      expect(recorded.request.system).toBe('Be brief. (rewritten)');
      expect(recorded.request).toEqual(canonicalRequest(sent[i]!));
      expect(recorded.hash).toBe(requestHash(sent[i]!));
      expect(canonicalHash(recorded.request)).toBe(recorded.hash);
      expect(firstDifference(recorded.request, canonicalRequest(sent[i]!))).toBeUndefined();
    }
    // Cheap: the tools and system are written once; later snapshots keep the previous messages and add the new ones by id.
    expect(snapshots[0]!.data.tools?.length).toBeGreaterThan(3);
    for (const snapshot of snapshots.slice(1)) {
      expect(snapshot.data.tools).toBeUndefined();
      expect(snapshot.data.system).toBeUndefined();
      expect(snapshot.data.config).toBeUndefined();
      expect(snapshot.data.messages.keep).toBeGreaterThan(0);
      for (const entry of snapshot.data.messages.add) expect(typeof entry).toBe('string');
    }
    const lines = readFileSync(session.path, 'utf8').split('\n');
    const snapshotBytes = lines
      .filter((line) => line.includes('"type":"request/snapshot"'))
      .slice(1)
      .reduce((n, line) => n + line.length, 0);
    expect(snapshotBytes / (snapshots.length - 1)).toBeLessThan(400);
    // Ignorable: a reader that does not know the type may skip it.
    expect(snapshots.every((s) => s.ignorable === true)).toBe(true);
  });

  it('names the first differing path with both values', () => {
    const a = canonicalRequest({
      provider: 'p',
      model: 'm',
      messages: [],
      tools: [
        { name: 'x', description: 'one', inputSchema: { type: 'object' } },
        { name: 'y', description: 'two', inputSchema: { type: 'object' } },
      ],
    });
    const b = canonicalRequest({
      provider: 'p',
      model: 'm',
      messages: [],
      tools: [
        { name: 'x', description: 'one', inputSchema: { type: 'object' } },
        { name: 'y', description: 'TWO', inputSchema: { type: 'object' } },
      ],
    });
    expect(firstDifference(a, b)).toEqual({ path: 'tools[1].description', recorded: 'two', actual: 'TWO' });
    const c = canonicalRequest({ provider: 'p', model: 'm', messages: [], tools: [a.tools[0]!] });
    expect(firstDifference(a, c)?.path).toBe('tools[1]');
    expect(firstDifference(a, { ...a, system: 'hi' })?.path).toBe('system');
  });

  it('hashes each request as a whole, whatever the previous one was (the recorder goes on from its hash state)', () => {
    const recorder = new RequestRecorder();
    const base = { provider: 'p', model: 'm', tools: [{ name: 't', description: 'd', inputSchema: { type: 'object' } }] } as const;
    const user = (text: string) => createUserMessage(text);
    const model = (text: string) => createAssistantMessage({ provider: 'p', model: 'm', content: text, replayState: { response: { kind: 'k', version: 1, text } } });
    const surface = [user('a'), model('b'), user('c'), model('d')];
    const stripped = (() => {
      const { replayState: _, ...source } = surface[1]!.source as { replayState?: unknown };
      return { ...surface[1]!, source } as (typeof surface)[number];
    })();
    const requests: GenerateOptions[] = [
      { ...base, messages: [] },
      { ...base, messages: surface.slice(0, 1) },
      { ...base, messages: surface.slice(0, 2) },
      { ...base, messages: surface.slice(0, 4) }, // extends the previous one
      { ...base, messages: surface.slice(0, 4) }, // the same again
      { ...base, system: 'S', messages: surface.slice(0, 4) }, // the header changed
      { ...base, system: 'S', messages: [surface[0]!, stripped, ...surface.slice(2)] }, // a copy without replay state in the middle
      { ...base, system: 'S', messages: surface.slice(0, 3) }, // shorter
      { ...base, system: 'S', temperature: 0.5, messages: surface }, // the config changed
      { ...base, system: 'S', temperature: 0.5, tools: [], messages: [...surface, user('e')] }, // the tools changed
      { ...base, system: 'S', temperature: 0.5, tools: [], messages: [user('other'), ...surface.slice(1)] }, // the first message replaced
    ];
    const hashes = requests.map((request, i) => recorder.snapshot(1, i + 1, request, surface).hash);
    expect(hashes).toEqual(requests.map(requestHash));
    expect(hashes[3]).toBe(hashes[4]);
    expect(new Set(hashes).size).toBe(hashes.length - 1);
  });
});
