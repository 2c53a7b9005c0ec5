/**
 * The cassette compares each request with its recording by the hash of its canonical request, now
 * in O(new messages) per call (RequestHasher continues the previous request's hash): it is always
 * exactly `requestHash`, and a change anywhere in the history is still a divergence at the call
 * where it first appears, with its path and both values.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCassette, type CassetteReport } from '../../plugins/llm-replay/index.ts';
import {
  createHarness,
  createUserMessage,
  definePlugin,
  readJournal,
  recordedCalls,
  requestHash,
  RequestHasher,
  type AnySessionEvent,
  type GenerateOptions,
  type HarnessConfig,
  type Message,
  type PluginSpec,
} from '../../runtime/index.ts';
import { deepFreeze, RequestRecorder } from '../../runtime/internal.ts';
import { plugin, root, tempDir } from '../agent/support.ts';

const dir = tempDir('harness-cassette-hash-');
let shortRecording: string;

function config(extra: PluginSpec[] = []): HarnessConfig {
  const scriptPath = join(dir, 'script.json');
  writeFileSync(scriptPath, JSON.stringify({ replies: [{ reply: { text: 'Noted; carry on.', usage: { inputTokens: 40, outputTokens: 4 } } }] }));
  return { defaults: { provider: 'scripted', model: 'test' }, plugins: [{ module: plugin('llm-scripted'), config: { scripts: { test: scriptPath } } }, ...extra] };
}

/** Records `turns` turns (one model call each) and returns the journal's path. */
async function record(turns: number, name: string): Promise<string> {
  const harness = await createHarness({ dataDir: join(dir, name), config: config() });
  try {
    const session = await harness.createSession({ cwd: dir });
    for (let turn = 1; turn <= turns; turn++) {
      const end = await session.runToEnd(`question ${turn}: what next?`);
      expect(end.data.reason).toBe('completed');
    }
    await session.close();
    return session.path;
  } finally {
    await harness.dispose();
  }
}

beforeAll(async () => {
  shortRecording = await record(30, 'short');
}, 120_000);

function expectSame(report: CassetteReport): void {
  expect(report.divergences).toEqual([]);
  expect(report.same).toBe(true);
}

describe('a change in an early message is still a divergence', () => {
  /** Rewrites the first prompt in every request from the `from`th call on. */
  const rewriteFirstPrompt = (from: number): PluginSpec => {
    let calls = 0;
    return {
      plugin: definePlugin({
        name: 'rewrite-first-prompt',
        setup(ctx) {
          ctx.on('llm/stream', (options, next) => {
            calls++;
            if (calls < from) return next(options);
            const messages = options.messages.map((message, i) => (i === 0 ? createUserMessage('question 1: something else?') : message));
            return next({ ...options, messages });
          });
        },
      }),
    };
  };

  it('at the call where it first appears, naming the path and both values', { timeout: 120_000 }, async () => {
    const report = await runCassette(shortRecording, { config: config([rewriteFirstPrompt(20)]), baseDir: root });
    expect(report.same).toBe(false);
    expect(report.calls).toMatchObject({ recorded: 30, served: 30, compared: 30, diverged: 11 });
    expect(report.divergences[0]).toBe('call 20 (turn 20 step 1): messages[0].content[0].text: "question 1: what next?" ≠ "question 1: something else?"');
    expect(report.divergences.filter((d) => d.includes('messages[0].content[0].text'))).toHaveLength(11);
  });

  it('the same run unchanged is the same (the hash continues across calls)', { timeout: 120_000 }, async () => {
    expectSame(await runCassette(shortRecording, { config: config(), baseDir: root }));
  });
});

describe('recorded requests', () => {
  it('share one canonical form per message across the calls that hold it (not a copy per call)', async () => {
    const events: AnySessionEvent[] = [];
    for await (const event of readJournal(shortRecording)) events.push(event);
    const calls = recordedCalls(events);
    expect(calls).toHaveLength(30);
    const requests = calls.map((call) => {
      const recorded = call.request();
      return recorded?.ok ? recorded.request : undefined;
    });
    expect(requests[29]!.messages).toHaveLength(59);
    expect(requests[29]!.messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'question 1: what next?' }] });
    for (let i = 1; i < 30; i++) expect(requests[i]!.messages[0]).toBe(requests[i - 1]!.messages[0]);
    expect(requests[29]!.messages[55]).toBe(requests[28]!.messages[55]); // a model reply, with its replay state
  });
});

describe('RequestHasher', () => {
  const base = (messages: readonly Message[]): GenerateOptions => ({ provider: 'p', model: 'm', system: 's', tools: [], messages });
  const user = (text: string) => deepFreeze(createUserMessage(text)) as Message;

  it('equals requestHash across appends, an early change, a header change and in-place changes of unfrozen messages and lists', () => {
    const hasher = new RequestHasher();
    const check = (request: GenerateOptions) => expect(hasher.hash(request)).toBe(requestHash(request));
    const a = user('a');
    const b = user('b');
    const c = user('c');
    check(base([]));
    check(base([a]));
    check(base([a, b]));
    check(base([a, b, c]));
    check(base([user('A'), b, c])); // an early message replaced
    check(base([a, b, c]));
    check({ ...base([a, b, c]), system: 't' }); // the header changed, the messages did not
    check({ ...base([a, b, c]), model: 'n' });
    check(base([a, c]));
    // A message that is not frozen, changed in place between two requests.
    const loose = { ...createUserMessage('loose'), content: [{ type: 'text', text: 'loose' }] } as { content: { type: 'text'; text: string }[] };
    const withLoose = [a, loose as unknown as Message, c];
    check(base(Object.freeze([...withLoose])));
    loose.content = [{ type: 'text', text: 'changed' }];
    check(base(Object.freeze([...withLoose, b])));
    // A list that is not frozen, changed in place.
    const list: Message[] = [a, b];
    check(base(list));
    list[0] = c;
    list.push(a);
    check(base(list));
  });

  it("RequestRecorder's snapshots carry the same hash (the two keep the previous request in one shape) and the header only when it changed", () => {
    const recorder = new RequestRecorder();
    let step = 0;
    const snapshot = (request: GenerateOptions) => {
      const taken = recorder.snapshot(1, ++step, request, request.messages);
      expect(taken.hash).toBe(requestHash(request));
      return taken;
    };
    const a = user('a');
    const b = user('b');
    const c = user('c');
    expect(snapshot(base([]))).toMatchObject({ config: { provider: 'p', model: 'm' }, system: 's', tools: [], messages: { keep: 0, add: [] } });
    expect(snapshot(base([a]))).not.toHaveProperty('config');
    expect(snapshot(base([a, b, c])).messages).toEqual({ keep: 1, add: [b.id, c.id] });
    expect(snapshot(base([user('A'), b, c])).messages.keep).toBe(0);
    snapshot(base([a, b, c]));
    const changed = snapshot({ ...base([a, b, c]), system: 't' });
    expect(changed).toMatchObject({ system: 't', messages: { keep: 3, add: [] } });
    expect(changed).not.toHaveProperty('tools');
    expect(snapshot({ ...base([a, b, c]), model: 'n' })).toHaveProperty('config', { provider: 'p', model: 'n' });
    snapshot(base([a, c]));
  });
});
