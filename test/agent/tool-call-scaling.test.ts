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
