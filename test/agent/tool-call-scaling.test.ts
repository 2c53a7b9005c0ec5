/**
 * No quadratic path in the loop's tool calls (issue 22.3): the calls of one assistant message —
 * each parsed, approved, journaled (`tool/call`, `approval/decided`, `tool/start`, a checkpoint,
 * `tool/result`), run and answered — read the journal's state a fixed number of times, not once
 * per call. Before the fix each call's body read `journal.state` (for its context's config), and a
 * read between the calls' records finishes the fold's pending-call list, O(pending calls): in the
 * stream bench's 2,000-call message that was ~7% of the loop's CPU (fold.ts `index` + `finish`).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { defineTool, definePlugin, LlmAdapter, z, type GenerateOptions, type StreamChunk } from '../../runtime/index.ts';
import { createTestHarness, type TestHarness } from '../../testing/index.ts';

/** A model whose one reply is `calls` tool calls of `echo` (the count is the user's message). */
class ManyCallsAdapter extends LlmAdapter {
  listModels() {
    return [{ id: 'm', contextWindow: 1_000_000 }];
  }
  async *stream(options: GenerateOptions): AsyncGenerator<StreamChunk> {
    const last = options.messages[options.messages.length - 1]!;
    const calls = Number(last.content[0]!.type === 'text' ? last.content[0]!.text : 0);
    for (let i = 0; i < calls; i++) {
      yield { type: 'block-start', index: i, blockType: 'tool-call', id: `call-${i}`, name: 'echo' };
      yield { type: 'tool-call-delta', index: i, arguments: `{"n":${i}}` };
      yield { type: 'block-end', index: i };
    }
    yield { type: 'finish', finish: { kind: 'tool-calls' } };
  }
}

const manyCalls = definePlugin({
  name: 'many-calls-model',
  setup(ctx) {
    ctx.llm.registerAdapter(['many'], new ManyCallsAdapter());
  },
});

const echo = defineTool({ name: 'echo', description: 'Echoes n.', input: z.object({ n: z.number() }), permission: 'read', execute: ({ n }) => `n=${n}` });

let harness: TestHarness | undefined;
afterAll(async () => {
  await harness?.dispose();
});

/** Reads of the journal's `state` during one turn whose message has `calls` calls; checks every call ran. */
async function stateReads(h: TestHarness, calls: number): Promise<number> {
  const session = await h.createSession({ maxSteps: 1 });
  // The session's own journal (private): count what the loop reads of its state.
  const journal = (session as unknown as { journal: object }).journal;
  const getter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(journal), 'state')!.get!;
  let reads = 0;
  Object.defineProperty(journal, 'state', {
    get() {
      reads++;
      return getter.call(journal);
    },
  });
  let results = 0;
  for await (const event of session.run(String(calls), { approve: () => 'allow' })) {
    if (event.type === 'tool/result') {
      expect(event.data.code).toBeUndefined();
      expect(JSON.stringify(event.data.message.content)).toContain(`n=${results}`);
      results++;
    }
  }
  await session.close();
  expect(results).toBe(calls);
  return reads;
}

describe('the loop’s tool calls do not read the fold per call', () => {
  it('a message with 200 calls reads the journal state as often as one with 2', async () => {
    harness = await createTestHarness({ plugins: [{ plugin: manyCalls }], defaults: { provider: 'many', model: 'm' } });
    harness.ctx.tools.register(echo);
    const few = await stateReads(harness, 2);
    const many = await stateReads(harness, 200);
    // A read between the calls' records finishes the fold's pending list (O(pending calls)): one
    // per call made a message with n calls O(n²).
    expect(many).toBe(few);
  });
});

/**
 * The calls of one message approved at once share one checkpoint (one fsync, not one per call:
 * in the stream bench's ~385-call message, 385 fsyncs in series), and every body still starts
 * only after a checkpoint that covers its `tool/start` (DESIGN "Durability"). An approval that has
 * to be waited for starts what was approved before it, so those bodies run while someone is asked.
 */
describe('tool calls approved at once share one checkpoint', () => {
  let currentLog: string[] = [];
  let logged: TestHarness | undefined;
  afterAll(async () => {
    await logged?.dispose();
  });
  async function loggingHarness(): Promise<TestHarness> {
    if (logged !== undefined) return logged;
    logged = await createTestHarness({ plugins: [{ plugin: manyCalls }], defaults: { provider: 'many', model: 'm' } });
    logged.ctx.tools.register(
      defineTool({ name: 'echo', description: 'Echoes n.', input: z.object({ n: z.number() }), permission: 'read', execute: ({ n }) => (currentLog.push(`body ${n}`), `n=${n}`) }),
    );
    return logged;
  }
  /** Runs a turn of `calls` echo calls; logs checkpoints (start/end), tool/start appends and bodies. */
  async function logTurn(h: TestHarness, calls: number, approve: (callIndex: number, log: string[]) => 'allow' | Promise<'allow'>) {
    const log: string[] = [];
    const session = await h.createSession({ maxSteps: 1 });
    const journal = (session as unknown as { journal: { checkpoint(): Promise<void>; append(type: string, data: { callId?: string }, options?: unknown): unknown } }).journal;
    const checkpoint = journal.checkpoint.bind(journal);
    const append = journal.append.bind(journal);
    journal.append = (type, data, options) => {
      if (type === 'tool/start') log.push(`start ${data.callId!.slice('call-'.length)}`);
      return append(type, data, options);
    };
    journal.checkpoint = async () => {
      log.push('checkpoint');
      await checkpoint();
      log.push('checkpointed');
    };
    currentLog = log;
    let results = 0;
    for await (const event of session.run(String(calls), { approve: (request) => approve(Number(request.callId.slice('call-'.length)), log) })) {
      if (event.type === 'tool/result') {
        expect(event.data.code).toBeUndefined();
        results++;
      }
    }
    await session.close();
    expect(results).toBe(calls);
    return log;
  }

  /** Every body starts after a finished checkpoint that began after its tool/start. */
  function expectCovered(log: readonly string[], calls: number): void {
    for (let n = 0; n < calls; n++) {
      const started = log.indexOf(`start ${n}`);
      const body = log.indexOf(`body ${n}`);
      expect(started).toBeGreaterThanOrEqual(0);
      expect(body).toBeGreaterThan(started);
      const between = log.slice(started, body);
      const began = between.indexOf('checkpoint');
      expect(began, `call ${n}: a checkpoint between its tool/start and its body`).toBeGreaterThanOrEqual(0);
      expect(between.indexOf('checkpointed', began), `call ${n}: that checkpoint finished before the body`).toBeGreaterThan(began);
    }
  }

  it('50 calls approved at once: one checkpoint for all of them, each body after it', async () => {
    const h = await loggingHarness();
    const one = await logTurn(h, 1, () => 'allow');
    const fifty = await logTurn(h, 50, () => 'allow');
    const checkpoints = (log: readonly string[]) => log.filter((entry) => entry === 'checkpoint').length;
    // Before the model call and at turn end, plus one for the tool calls — however many there are.
    expect(checkpoints(fifty)).toBe(checkpoints(one));
    expectCovered(fifty, 50);
    // The bodies start in call order.
    const bodies = fifty.filter((entry) => entry.startsWith('body '));
    expect(bodies).toEqual(Array.from({ length: 50 }, (_, n) => `body ${n}`));
  });

  it('an approval that is waited for: the calls approved before it run meanwhile', async () => {
    const h = await loggingHarness();
    // Call 2's answer comes only once calls 0 and 1 have run: it would never come if their bodies
    // waited for it (the test would time out).
    const log = await logTurn(h, 4, (index, log) => {
      if (index !== 2) return 'allow';
      return new Promise<'allow'>((resolve) => {
        const poll = () => (log.includes('body 1') ? resolve('allow') : setImmediate(poll));
        poll();
      });
    });
    expectCovered(log, 4);
    expect(log.indexOf('body 1')).toBeLessThan(log.indexOf('start 2'));
  });
});
