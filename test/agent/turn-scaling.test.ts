/**
 * A long session's turns are not slower than a short one's (issue 16, "a long session gets slower
 * per turn"). A request carries the whole history, so the model (and the SDK serialising the
 * request) does work that grows with it; the runtime's own work per turn must not. Here the model
 * ignores its request, so what is measured is the runtime's CPU per turn: the agent loop, the
 * replay discipline, the request snapshot and its hash, the journal, the token meter and the
 * compaction check. Before the fix, each of those read every message of the history per call
 * (3,000 turns: ~3-4x the CPU per turn of a 200-turn session).
 *
 * Two sessions in one harness: one with 200 turns of history, one with 3,000 (appended to the
 * journal directly, each reply carrying replay state the adapter accepts), then turns on both,
 * interleaved, each turn's process CPU measured; the medians are compared. CPU time and medians of
 * interleaved turns: robust to a busy machine, never a wall-clock threshold.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createAssistantMessage, createUserMessage, definePlugin, LlmAdapter, type AgentSession, type GenerateOptions, type StreamChunk } from '../../runtime/index.ts';
import { createTestHarness, type TestHarness } from '../../testing/index.ts';
import { plugin } from './support.ts';

const SHORT = 200;
const LONG = 3_000;
const ROUNDS = 120;
const WARM_UP = 10;
/** CPU per turn with 3,000 turns of history ÷ with 200: at most this. */
const RATIO = 1.5;

/** A model that ignores its request: a one-word reply with replay state of its own format. */
class IgnoringAdapter extends LlmAdapter {
  override readonly replayFormat = { kind: 'ignoring', version: 1 } as const;
  validated = 0;
  listModels() {
    return [{ id: 'm', contextWindow: 1_000_000 }];
  }
  override validateReplayState(): string | undefined {
    this.validated++;
    return undefined;
  }
  async *stream(_options: GenerateOptions): AsyncGenerator<StreamChunk> {
    yield { type: 'block-start', index: 0, blockType: 'text' };
    yield { type: 'text-delta', index: 0, text: 'ok' };
    yield { type: 'block-end', index: 0 };
    yield { type: 'usage', usage: { inputTokens: 10, outputTokens: 1 } };
    yield { type: 'finish', finish: { kind: 'stop' }, replayState: { response: { kind: 'ignoring', version: 1 }, blocks: [null] } };
  }
}

const adapter = new IgnoringAdapter();
const ignoring = definePlugin({
  name: 'ignoring-model',
  setup(ctx) {
    ctx.llm.registerAdapter(['ignoring'], adapter);
  },
});

let harness: TestHarness | undefined;
afterAll(async () => {
  await harness?.dispose();
});

/** Appends `turns` completed turns to a new session's journal, as the loop would have journaled them. */
async function sessionWithHistory(h: TestHarness, turns: number): Promise<AgentSession> {
  const session = await h.createSession();
  const journal = session.session;
  for (let turn = 1; turn <= turns; turn++) {
    await journal.append('turn/start', { turn });
    await journal.append('user/message', { turn, message: createUserMessage(`question ${turn}`) });
    await journal.append('step/start', { turn, step: 1 });
    const message = createAssistantMessage({ provider: 'ignoring', model: 'm', content: `answer ${turn}`, replayState: { response: { kind: 'ignoring', version: 1 }, blocks: [null] } });
    await journal.append('assistant/message', { turn, step: 1, message, finish: { kind: 'stop' }, usage: { inputTokens: 10, outputTokens: 1 } });
    await journal.append('step/end', { turn, step: 1 });
    await journal.append('turn/end', { turn, reason: 'completed' });
  }
  await journal.checkpoint();
  return session;
}

/** Process CPU (µs) of one turn. */
async function turnCpu(session: AgentSession): Promise<number> {
  const before = process.cpuUsage();
  for await (const event of session.run('next')) if (event.type === 'turn/end') expect(event.data).toEqual({ turn: event.data.turn, reason: 'completed' });
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

describe('the runtime’s CPU per turn does not grow with the history', () => {
  it(`a session with ${LONG} turns of history: CPU per turn within ${RATIO}x of one with ${SHORT}`, { timeout: 600_000 }, async () => {
    harness = await createTestHarness({ plugins: [{ plugin: ignoring }, { module: plugin('token-meter') }, { module: plugin('compaction') }], defaults: { provider: 'ignoring', model: 'm' } });
    const short = await sessionWithHistory(harness, SHORT);
    const long = await sessionWithHistory(harness, LONG);
    const cpu = { short: [] as number[], long: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating which goes first, so that neither always follows the other's garbage.
      const order = round % 2 ? (['short', 'long'] as const) : (['long', 'short'] as const);
      for (const which of order) {
        const used = await turnCpu(which === 'short' ? short : long);
        if (round >= WARM_UP) cpu[which].push(used);
      }
    }
    expect(long.state.turnCount).toBe(LONG + ROUNDS);
    expect(long.state.messages).toHaveLength(2 * (LONG + ROUNDS));
    const ratio = median(cpu.long) / median(cpu.short);
    expect(ratio, `CPU µs per turn (median): ${median(cpu.long).toFixed(0)} with ${LONG} turns of history, ${median(cpu.short).toFixed(0)} with ${SHORT}`).toBeLessThan(RATIO);
    // Each model message's replay state was checked once, not once per request.
    expect(adapter.validated).toBe(SHORT + LONG + 2 * ROUNDS - 2);
  });
});
