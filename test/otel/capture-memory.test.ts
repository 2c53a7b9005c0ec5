/**
 * With `captureContent`, the otel plugin keeps a session's snapshot reader between its turns (a
 * turn's first `request/snapshot` names earlier messages by id). It holds the session's surface,
 * not every message the session ever had: a session compacted every turn (`surface/replace`, as
 * the compaction plugin journals it) stays flat in memory over 2,000 turns, and its model calls
 * still carry their whole input (the summary and the new prompt). Real OTLP/HTTP receiver.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { createPluginMessage } from '../../runtime/index.ts';
import otelPlugin from '../../plugins/otel/index.ts';
import { createTestHarness, runTurn, type TestHarness } from '../../testing/index.ts';
import { receiverPerTest } from './receiver.ts';

const TURNS = 2000;
/** Each prompt's size: what a reader that kept every message would hold per turn (and more). */
const PROMPT_BYTES = 4000;
const FLUSH_TURNS = 100;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapAfterGc = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

const receiver = receiverPerTest();
let harness: TestHarness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

describe('otel captureContent memory', { timeout: 300_000 }, () => {
  it(`a session compacted every turn holds no more after ${TURNS} turns than after 200 (bytes per turn far below a prompt's)`, async () => {
    const live = await receiver();
    const test = await createTestHarness({
      script: () => ({ text: 'Done.' }),
      plugins: [{ plugin: otelPlugin, config: { endpoint: live.url, scheduledDelayMs: 50, metrics: false, captureContent: true } }],
    });
    harness = test;
    const session = await test.createSession();
    const heapAt = new Map<number, number>();
    for (let n = 1; n <= TURNS; n++) {
      const turn = await runTurn(session, `turn ${n} ${'p'.repeat(PROMPT_BYTES)}`);
      expect(turn.end.reason).toBe('completed');
      // What the compaction plugin journals: the surface so far replaced by one summary message.
      await session.session.append('surface/replace', {
        start: 0,
        end: session.state.messages.length,
        messages: [createPluginMessage('compaction', `Summary of turns 1 to ${n}.`, { form: 'recall' })],
      });
      const measured = n === 20 || n === 200 || n === TURNS;
      // Flushed every FLUSH_TURNS turns: the export queue is bounded (2,048 spans) and drops what
      // overflows by design, so 1,800 turns left to the 50 ms timer on a slow machine could drop the
      // very spans this test reads. What is measured here is the snapshot reader, not the queue.
      if (measured || n % FLUSH_TURNS === 0) {
        expect(await test.ctx.otel!.flush(30_000)).toBe(true);
        expect(test.ctx.otel!.stats()).toMatchObject({ droppedSpanCount: 0, failedSpanCount: 0 });
      }
      if (measured) {
        const last = live.spans.filter((span) => span.name.startsWith('chat ')).at(-1);
        expect(last, `the chat span of turn ${n}`).toBeDefined();
        // The call's whole input: the previous turn's summary (named by id in the snapshot) and the prompt.
        expect(JSON.parse(last!.attributes['gen_ai.input.messages'] as string)).toEqual([
          expect.objectContaining({ parts: [expect.objectContaining({ content: expect.stringContaining(`Summary of turns 1 to ${n - 1}.`) })] }),
          expect.objectContaining({ role: 'user', parts: [expect.objectContaining({ content: expect.stringContaining(`turn ${n} `) })] }),
        ]);
      }
      if (measured || n % FLUSH_TURNS === 0) {
        live.spans.length = 0;
        live.bodies.length = 0;
        live.headers.length = 0;
      }
      if (measured) heapAt.set(n, heapAfterGc());
    }
    const early = heapAt.get(200)! - heapAt.get(20)!;
    const late = heapAt.get(TURNS)! - heapAt.get(20)!;
    const perTurn = (heapAt.get(TURNS)! - heapAt.get(200)!) / (TURNS - 200);
    console.log(`heap retained after 200 turns ${(early / 1048576).toFixed(2)} MiB, after ${TURNS} ${(late / 1048576).toFixed(2)} MiB; ${Math.round(perTurn)} B/turn between`);
    // A reader keeping every message grows by more than a prompt per turn (~12 KB here).
    expect(perTurn).toBeLessThan(PROMPT_BYTES / 2);
  });
});
