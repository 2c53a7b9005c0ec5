/**
 * plugins/token-meter (issue #7, acceptance "token meter"): a projection over `session/event`
 * deliveries. Every DeepSeek Harness session in ../shared/fixtures/dsh-sessions is imported and
 * delivered through the meter; its per-class totals must equal the sums of the recorded usage,
 * computed here independently.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAssistantMessage,
  createHarness,
  createPluginMessage,
  createUserMessage,
  importDshSession,
  messageText,
  type AnySessionEvent,
  type Harness,
  type Message,
  type SessionEvent,
  type SessionEventMap,
  type TokenUsage,
} from '../../runtime/index.ts';
import { USAGE_CLASSES, type UsageUpdatedEvent } from '../../plugins/token-meter/index.ts';
import { dshSessionFiles } from '../session/support.ts';
import { plugin } from './support.ts';

const FLASH = { inputTokens: 0.27, cacheReadTokens: 0.07, outputTokens: 1.1 };
const PRICES = { 'deepseek-official': { 'deepseek-v4-flash': FLASH } };

let harness: Harness;
const updates: UsageUpdatedEvent[] = [];
beforeAll(async () => {
  harness = await createHarness({ config: { plugins: [{ module: plugin('token-meter'), config: { prices: PRICES } }] } });
  harness.ctx.on('usage/updated', (event) => void updates.push(event));
});
afterAll(async () => {
  await harness?.dispose();
});

const meter = () => harness.ctx.tokenMeter!;

async function deliver(h: Harness, sessionId: string, events: Iterable<AnySessionEvent>): Promise<void> {
  for (const event of events) await h.kernel.bus.deliver('session/event', { sessionId, event });
}

/** Per-class sums of the usage recorded on `assistant/message` and `compaction/summary` events (absent when never reported). */
function recordedTotals(events: readonly AnySessionEvent[]): { totals: Record<string, number>; requests: { seq: number; usage: TokenUsage }[] } {
  const totals: Record<string, number> = {};
  const requests: { seq: number; usage: TokenUsage }[] = [];
  for (const event of events) {
    let usage: TokenUsage | undefined;
    if (event.type === 'assistant/message') usage = event.data.usage;
    else if (event.type === 'compaction/summary') usage = event.data.usage;
    if (usage === undefined) continue;
    requests.push({ seq: event.seq, usage });
    for (const key of ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'] as const) {
      const count = usage[key];
      if (typeof count === 'number') totals[key] = (totals[key] ?? 0) + count;
    }
  }
  return { totals, requests };
}

const files = dshSessionFiles();

describe('token meter over every DeepSeek Harness session', () => {
  it('finds the fixtures', () => {
    expect(files.length).toBeGreaterThanOrEqual(27);
  });

  it.each(files)('$name: per-class totals equal the recorded usage; a second delivery counts nothing', async ({ name, path }) => {
    const { events } = await importDshSession(path);
    const sessionId = `dsh-${name}`;
    const expected = recordedTotals(events);
    const before = updates.length;
    await deliver(harness, sessionId, events);
    const usage = meter().session(sessionId);
    expect(usage.sessionId).toBe(sessionId);
    // Exact per-class equality, and a class no request reported stays absent (not 0).
    expect(usage.totals).toStrictEqual(expected.totals);
    for (const key of USAGE_CLASSES) expect(key in usage.totals).toBe(key in expected.totals);
    expect(usage.requests.map((r) => [r.seq, r.usage])).toStrictEqual(expected.requests.map((r) => [r.seq, r.usage]));
    // The fold's own usage sum agrees (the same events, summed by the runtime).
    const emitted = updates.length - before;
    if (expected.requests.length > 0) expect(emitted).toBeGreaterThan(0);
    expect(updates.slice(before).every((u) => u.sessionId === sessionId)).toBe(true);
    if (emitted > 0) expect(updates.at(-1)!.usage.totals).toStrictEqual(expected.totals);
    // Nothing counted twice: delivering everything again changes nothing and emits nothing.
    const snapshot = meter().session(sessionId);
    const emittedBefore = updates.length;
    await deliver(harness, sessionId, events);
    expect(meter().session(sessionId)).toStrictEqual(snapshot);
    expect(updates.length).toBe(emittedBefore);
  });

  it('jsonrpc-agent/bash-tool: cost at a given price table equals the hand computation', async () => {
    const file = files.find((f) => f.name === 'jsonrpc-agent/bash-tool/session.jsonl')!;
    const { events } = await importDshSession(file.path);
    await deliver(harness, 'cost-check', events);
    const usage = meter().session('cost-check');
    // Prices (USD per million tokens): input 0.27, cache read 0.07, output 1.1 (reasoning is part of output).
    // Request 1: 123 in, 1664 cache read, 89 out → 123·0.27 + 1664·0.07 + 89·1.1 = 33.21 + 116.48 + 97.90 = 247.59 → $0.00024759
    // Request 2: 233 in, 1664 cache read, 24 out → 233·0.27 + 1664·0.07 + 24·1.1 = 62.91 + 116.48 + 26.40 = 205.79 → $0.00020579
    // Session: 453.38 µ$ → $0.00045338
    expect(usage.requests.map((r) => r.usage)).toEqual([
      { inputTokens: 123, outputTokens: 89, cacheReadTokens: 1664, reasoningTokens: 17 },
      { inputTokens: 233, outputTokens: 24, cacheReadTokens: 1664, reasoningTokens: 15 },
    ]);
    expect(usage.requests[0]!.costUsd).toBeCloseTo(0.00024759, 12);
    expect(usage.requests[1]!.costUsd).toBeCloseTo(0.00020579, 12);
    expect(usage.costUsd).toBeCloseTo(0.00045338, 12);
    expect(usage.pricedRequestCount).toBe(2);
    expect(usage.totals).toStrictEqual({ inputTokens: 356, outputTokens: 113, cacheReadTokens: 3328, reasoningTokens: 32 });
    expect(meter().cost('deepseek-official', 'deepseek-v4-flash', { inputTokens: 1_000_000, outputTokens: 2_000_000, cacheWriteTokens: 5 })).toBeCloseTo(0.27 + 2.2, 12);
    expect(meter().cost('deepseek-official', 'other-model', { inputTokens: 1 })).toBeUndefined();
  });

  it('headless-agent/compaction-recovery: the compaction summary is counted once, as a compaction request', async () => {
    const file = files.find((f) => f.name === 'headless-agent/compaction-recovery/session.jsonl')!;
    const { events } = await importDshSession(file.path);
    await deliver(harness, 'compaction-recovery', events);
    const usage = meter().session('compaction-recovery');
    expect(usage.requests.map((r) => [r.purpose, r.usage])).toEqual([
      ['agent', { inputTokens: 24, outputTokens: 6 }],
      ['compaction', { inputTokens: 20, outputTokens: 4 }],
      ['agent', { inputTokens: 20, outputTokens: 4 }],
    ]);
    expect(usage.totals).toStrictEqual({ inputTokens: 64, outputTokens: 14 });
  });
});

// ── Synthetic sessions: exact numbers written out ────────────────────────────────────────────

let seq = 0;
function ev<T extends keyof SessionEventMap & string>(type: T, data: SessionEventMap[T]): AnySessionEvent {
  return { seq: ++seq, type, atMs: 0, data } as SessionEvent<T> as AnySessionEvent;
}
const say = (n: number, char = 'a') => char.repeat(n);
const reply = (text: string, usage?: TokenUsage, provider = 'acme', model = 'm1') =>
  ev('assistant/message', { turn: 1, step: 1, message: createAssistantMessage({ content: [{ type: 'text', text }], provider, model }), finish: { kind: 'stop' }, ...(usage ? { usage } : {}) });

describe('token meter: pressure, prices, unknown counts', () => {
  let h: Harness;
  const seen: UsageUpdatedEvent[] = [];
  beforeAll(async () => {
    h = await createHarness({
      config: {
        plugins: [
          {
            module: plugin('token-meter'),
            config: { prices: { acme: { m1: { inputTokens: 2, outputTokens: 8, cacheReadTokens: 0.5, cacheWriteTokens: 2.5 }, '*': { inputTokens: 1, outputTokens: 1 } } } },
          },
        ],
      },
    });
    h.ctx.on('usage/updated', (event) => void seen.push(event));
  });
  afterAll(async () => {
    await h?.dispose();
  });

  it('context pressure: last report + estimate since; it moves down at once after a surface/replace', async () => {
    seq = 0;
    const id = 'pressure';
    const m = () => h.ctx.tokenMeter!.session(id).contextTokens;
    await deliver(h, id, [ev('turn/start', { turn: 1 }), ev('user/message', { turn: 1, message: createUserMessage(say(400)) })]);
    expect(m()).toBe(100); // 400 chars / 4
    await deliver(h, id, [reply(say(80), { inputTokens: 150, outputTokens: 20 })]);
    expect(m()).toBe(170); // reported: 150 + 20
    await deliver(h, id, [ev('user/message', { turn: 1, message: createUserMessage(say(400)) })]);
    expect(m()).toBe(270); // 170 + 100 estimated since
    await deliver(h, id, [reply(say(80), { inputTokens: 250, cacheReadTokens: 40, outputTokens: 30 })]);
    expect(m()).toBe(320); // 250 + 40 + 30
    await deliver(h, id, [ev('user/message', { turn: 1, message: createUserMessage(say(40)) })]);
    expect(m()).toBe(330);
    // Four reported messages (estimates 100 + 20 + 100 + 20 = 240) become one summary of 80 chars (20):
    // 320 − 240 + 20 = 100 for the reported part, + 10 for the message after it.
    const before = seen.length;
    await deliver(h, id, [ev('surface/replace', { start: 0, end: 4, messages: [createPluginMessage('compaction', say(80))] })]);
    expect(m()).toBe(110);
    expect(seen.length).toBe(before + 1);
    expect(seen.at(-1)).toMatchObject({ sessionId: id, usage: { contextTokens: 110 } });
    // The next report replaces the estimate again.
    await deliver(h, id, [reply(say(40), { inputTokens: 130, outputTokens: 10 })]);
    expect(m()).toBe(140);
  });

  it('a reply that reports no input count does not replace the pressure estimate (unknown stays unknown)', async () => {
    seq = 0;
    const id = 'no-input-count';
    await deliver(h, id, [ev('user/message', { message: createUserMessage(say(400)) }), reply(say(40), { outputTokens: 5 })]);
    const usage = h.ctx.tokenMeter!.session(id);
    expect(usage.contextTokens).toBe(110); // 100 + 10 estimated, not 5
    expect(usage.totals).toStrictEqual({ outputTokens: 5 });
  });

  it('costs per class, "*" prices any model of a provider, an unpriced provider has no cost', async () => {
    seq = 0;
    const id = 'costs';
    await deliver(h, id, [
      reply('x', { inputTokens: 1000, outputTokens: 500, cacheReadTokens: 4000, cacheWriteTokens: 200, reasoningTokens: 300 }),
      reply('y', { inputTokens: 3000, outputTokens: 1000 }, 'acme', 'm2'),
      reply('z', { inputTokens: 7, outputTokens: 7 }, 'elsewhere', 'q'),
    ]);
    const usage = h.ctx.tokenMeter!.session(id);
    // m1: 1000·2 + 500·8 + 4000·0.5 + 200·2.5 = 2000 + 4000 + 2000 + 500 = 8500 µ$ (reasoning is inside output: not priced again)
    // m2 via '*': 3000·1 + 1000·1 = 4000 µ$; elsewhere/q: no price.
    expect(usage.requests.map((r) => r.costUsd)).toEqual([0.0085, 0.004, undefined]);
    expect('costUsd' in usage.requests[2]!).toBe(false);
    expect(usage.costUsd).toBeCloseTo(0.0125, 12);
    expect(usage.pricedRequestCount).toBe(2);
    expect(usage.totals).toStrictEqual({ inputTokens: 4007, outputTokens: 1507, cacheReadTokens: 4000, cacheWriteTokens: 200, reasoningTokens: 300 });
  });

  it('an unknown session reads as empty and is not invented; sessions stay apart', async () => {
    const meterNow = h.ctx.tokenMeter!;
    expect(meterNow.session('never-seen')).toStrictEqual({ sessionId: 'never-seen', requests: [], totals: {}, costUsd: 0, pricedRequestCount: 0, contextTokens: 0 });
    expect(meterNow.sessions()).not.toContain('never-seen');
    expect(meterNow.sessions()).toEqual(expect.arrayContaining(['pressure', 'costs']));
    expect(meterNow.session('costs').totals.inputTokens).toBe(4007);
  });

  it('a usage read earlier is not changed by later requests (its request list is its own)', async () => {
    seq = 0;
    const id = 'kept-snapshot';
    await deliver(h, id, [reply('x', { inputTokens: 10, outputTokens: 1 })]);
    const early = h.ctx.tokenMeter!.session(id);
    await deliver(h, id, [reply('y', { inputTokens: 20, outputTokens: 2 })]);
    const late = h.ctx.tokenMeter!.session(id);
    expect(early.requests.map((r) => r.seq)).toEqual([1]);
    expect(early.costUsd).toBeCloseTo(0.000028, 12);
    expect(late.requests.map((r) => r.seq)).toEqual([1, 2]);
    expect(late.costUsd).toBeCloseTo(0.000028 + 0.000056, 12);
    expect(late.pricedRequestCount).toBe(2);
  });

  it('estimateTokens of a conversation as it grows and changes equals the sum over its messages', () => {
    const estimate = h.ctx.tokenMeter!.estimateTokens;
    const byHand = (messages: readonly Message[]) => messages.reduce((sum, m) => sum + Math.ceil(messageText(m).length / 4), 0);
    const messages: Message[] = [createUserMessage(say(400))];
    expect(estimate([])).toBe(0);
    for (let i = 1; i < 40; i++) {
      messages.push(i % 2 ? createAssistantMessage({ content: say(i * 3, 'b'), provider: 'acme', model: 'm1' }) : createUserMessage(say(i)));
      expect(estimate(messages)).toBe(byHand(messages));
    }
    const changed = messages.slice();
    changed[7] = createUserMessage(say(999)); // a message replaced in the middle
    expect(estimate(changed)).toBe(byHand(changed));
    expect(estimate(messages.slice(0, 5))).toBe(byHand(messages.slice(0, 5))); // shorter
    expect(estimate(messages)).toBe(byHand(messages));
    const mutable = [messages[0]!, { ...messages[1]!, content: [{ type: 'text', text: say(40) }] } as Message];
    expect(estimate(mutable)).toBe(110);
    (mutable[1]!.content as { type: 'text'; text: string }[])[0]!.text = say(400); // not frozen: read again
    expect(estimate(mutable)).toBe(200);
  });

  it('a usage count that is not a number (null in a foreign record) is not counted and does not make the class appear', async () => {
    seq = 0;
    const id = 'null-counts';
    await deliver(h, id, [reply('x', { inputTokens: 10, outputTokens: null, cacheReadTokens: undefined } as unknown as TokenUsage)]);
    expect(h.ctx.tokenMeter!.session(id).totals).toStrictEqual({ inputTokens: 10 });
  });
});
