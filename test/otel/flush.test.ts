/**
 * `ctx.otel.flush()` resolves once what the session ended is at the collector: the spans still
 * queued and the spans the processor's timer already handed to the exporter, whose request may be
 * on the wire (the SDK's `BatchSpanProcessor.forceFlush` waits only for the first kind). Real
 * OTLP/HTTP receiver on 127.0.0.1, answering the timer's request late.
 */
import { afterEach, describe, expect, it } from 'vitest';
import otelPlugin from '../../plugins/otel/index.ts';
import { createTestHarness, runTurn, type TestHarness } from '../../testing/index.ts';
import { receiverPerTest } from './receiver.ts';

const receiver = receiverPerTest();
let harness: TestHarness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A harness traced to `endpoint` (the batch timer every `scheduledDelayMs`) that has run one completed turn. */
async function tracedTurn(endpoint: string, scheduledDelayMs: number): Promise<TestHarness> {
  const traced = await createTestHarness({
    script: () => ({ text: 'Done.' }),
    plugins: [{ plugin: otelPlugin, config: { endpoint, scheduledDelayMs, metrics: false } }],
  });
  harness = traced; // disposed after the test even if the turn fails
  expect((await runTurn(traced, 'Say done.')).end.reason).toBe('completed');
  return traced;
}

describe('otel flush', () => {
  it('waits for an export the batch timer started and the collector has not answered yet', async () => {
    const live = await receiver();
    // The first request (the timer's) is answered 1.5 s late; later ones at once.
    live.answerAfter(1500);
    harness = await tracedTurn(live.url, 1);
    await until(() => live.pendingCount > 0, 'the timer export to reach the receiver');
    live.answerAfter(0);

    expect(await harness.ctx.otel!.flush(10_000)).toBe(true);
    // Every span of the turn is at the collector when flush resolves, the late-answered ones too.
    expect(live.pendingCount).toBe(0);
    expect(live.spans.map((span) => span.name).sort()).toEqual(['chat test', 'invoke_agent harness', 'step']);
  });

  it('takes Infinity as no limit, and rejects a negative or NaN timeout with INVALID_ARGUMENTS', async () => {
    const live = await receiver();
    live.answerAfter(300);
    harness = await tracedTurn(live.url, 60_000);
    const otel = harness.ctx.otel!;
    for (const bad of [-1, Number.NaN, '5' as unknown as number]) {
      await expect(otel.flush(bad)).rejects.toMatchObject({ code: 'INVALID_ARGUMENTS', message: expect.stringContaining(`got ${String(bad)}`) });
    }
    // setTimeout would fire an Infinity timeout after 1 ms: flush would say false before the late answer.
    expect(await otel.flush(Number.POSITIVE_INFINITY)).toBe(true);
    expect(live.spans.map((span) => span.name).sort()).toEqual(['chat test', 'invoke_agent harness', 'step']);
  });
});
