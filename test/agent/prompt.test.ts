/**
 * `session.prompt()`: the embedder's one call (seed 003 "调用结果：固定外形"). One success shape —
 * the final assistant message, its text, the turn's usage and end reason — and failures thrown as a
 * HarnessError with the turn's code. Runs the real loop on the scripted model.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { getErrorInfo, HarnessError, readJournal, type AnySessionEvent, type Harness } from '../../runtime/index.ts';
import { recordingTools, scriptedHarness, type JsonScriptLike } from './support.ts';

let harness: (Harness & { dir: string }) | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

async function journal(path: string): Promise<AnySessionEvent[]> {
  const events: AnySessionEvent[] = [];
  for await (const event of readJournal(path)) events.push(event);
  return events;
}

describe('session.prompt', () => {
  it('returns the final message, its text, the usage summed over the steps and the end reason', async () => {
    const script: JsonScriptLike = {
      replies: [
        { when: { step: 1 }, reply: { reasoning: 'look first', toolCalls: [{ name: 'peek', arguments: { key: 'a' } }], usage: { inputTokens: 10, outputTokens: 3 } } },
        { when: { step: 2 }, reply: { reasoning: 'now answer', text: 'The value is a.', usage: { inputTokens: 20, outputTokens: 5, cacheReadTokens: 7 } } },
      ],
    };
    const ran: string[] = [];
    harness = await scriptedHarness(script, { tools: recordingTools(ran) });
    const session = await harness.createSession({ cwd: harness.dir });
    const result = await session.prompt('what is a?', { approve: () => 'allow' });

    expect(ran).toEqual(['peek:a']);
    expect(result).toMatchObject({ sessionId: session.id, turn: 1, reason: 'completed', text: 'The value is a.', stepCount: 2 });
    // Summed per class; a class no call reported (cacheWrite, reasoning) is absent, not 0.
    expect(result.usage).toEqual({ inputTokens: 30, outputTokens: 8, cacheReadTokens: 7 });
    expect(result.message.role).toBe('assistant');
    expect(result.message.content.map((block) => block.type)).toEqual(['reasoning', 'text']);
    expect(Object.isFrozen(result)).toBe(true);

    // The same message, and the same turn timing, as the journal holds.
    await session.close();
    const events = await journal(session.path);
    const messages = events.filter((event) => event.type === 'assistant/message');
    expect(messages).toHaveLength(2);
    expect(result.message).toEqual(messages[1]!.data.message);
    const start = events.find((event) => event.type === 'turn/start')!;
    const end = events.find((event) => event.type === 'turn/end')!;
    expect(result.startedAtMs).toBe(start.atMs);
    expect(result.durationMs).toBe(end.atMs - start.atMs);
  });

  it('numbers the turns of a session and reports max-tokens as a (partial) success', async () => {
    const script: JsonScriptLike = {
      replies: [
        { when: { turn: 1 }, reply: { text: 'first' } },
        { when: { turn: 2 }, reply: { text: 'cut of', finish: 'max-tokens', usage: { outputTokens: 4 } } },
      ],
    };
    harness = await scriptedHarness(script);
    const session = await harness.createSession({ cwd: harness.dir });
    const first = await session.prompt('one');
    expect(first).toMatchObject({ turn: 1, reason: 'completed', text: 'first', stepCount: 1 });
    const second = await session.prompt('two');
    expect(second).toMatchObject({ turn: 2, reason: 'max-tokens', text: 'cut of', usage: { outputTokens: 4 } });
  });

  it('throws a HarnessError with the failure code when the turn ends in error', async () => {
    harness = await scriptedHarness({ replies: [{ reply: { error: { code: 'SERVER', message: 'the scripted server fell over' } } }] });
    const session = await harness.createSession({ cwd: harness.dir });
    const error = await session.prompt('hi').then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(HarnessError.is(error)).toBe(true);
    const harnessError = error as HarnessError;
    expect(harnessError.code).toBe('SERVER');
    expect(harnessError.message).toContain('the scripted server fell over');
    expect(harnessError.failure).toMatchObject({ code: 'SERVER', sessionId: session.id, turn: 1, endReason: 'error' });
    // The journal still closed the turn with the same failure.
    await session.close();
    const end = (await journal(session.path)).find((event) => event.type === 'turn/end');
    expect(end?.data).toMatchObject({ reason: 'error', failure: { code: 'SERVER' } });
  });

  it('throws on an unknown provider (no success shape with an empty answer)', async () => {
    harness = await scriptedHarness({ replies: [{ reply: { text: 'never' } }] });
    const session = await harness.createSession({ cwd: harness.dir });
    await expect(session.prompt('hi', { provider: 'nowhere', model: 'none' })).rejects.toSatisfy((thrown: unknown) => HarnessError.is(thrown) && getErrorInfo(thrown).code === 'NO_ADAPTER');
  });

  it('throws ABORTED when the signal aborts the turn', async () => {
    harness = await scriptedHarness({ replies: [{ reply: { text: 'a long answer that streams slowly' } }] }, { paceMs: 50 });
    const session = await harness.createSession({ cwd: harness.dir });
    const controller = new AbortController();
    const pending = session.prompt('hi', { signal: controller.signal });
    setTimeout(() => controller.abort(), 30);
    const error = await pending.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(HarnessError.is(error)).toBe(true);
    expect((error as HarnessError).code).toBe('ABORTED');
    expect((error as HarnessError).failure).toMatchObject({ endReason: 'aborted', turn: 1 });
  });

  it('refuses a second prompt while a turn runs (SESSION_BUSY), and the first still answers', async () => {
    harness = await scriptedHarness({ replies: [{ reply: { text: 'done' } }] }, { paceMs: 5 });
    const session = await harness.createSession({ cwd: harness.dir });
    const first = session.prompt('one');
    await expect(session.prompt('two')).rejects.toSatisfy((thrown: unknown) => HarnessError.is(thrown) && thrown.code === 'SESSION_BUSY');
    expect((await first).text).toBe('done');
  });
});
