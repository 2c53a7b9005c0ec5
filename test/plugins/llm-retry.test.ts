/**
 * plugins/llm-retry against the REAL openai SDK (chat route) and the loopback fixture server
 * (issue #7, acceptance "retry"). Policy delays are small (jitter 0, so each delay is exact) except
 * where a provider `retry-after` decides the wait.
 *
 * "A tool call executed before the failure is not executed again" uses the fixture server too: its
 * response queue is naturally per attempt (tool-call stream, then 500, then text), which a JSON
 * script cannot express, and it drives the whole path — SDK, adapter, loop, retry — for real.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { defineTool, DEFAULT_RETRY_POLICY, resolveRetryPolicy, z } from '../../runtime/index.ts';
import { backoffDelayMs } from '../../plugins/llm-retry/index.ts';
import { providerErrorBody } from '../support/fixture-server.ts';
import { allow, collect, fixtureHarness, ofType, plugin } from './support.ts';

const TEXT = 'openai-chat/text-with-include-usage.sse';
const TEXT_ANSWER = "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.";

let rig: Awaited<ReturnType<typeof fixtureHarness>> | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function start(retry: Record<string, unknown>) {
  rig = await fixtureHarness([{ module: plugin('llm-retry'), config: retry }]);
  return rig;
}

const error = (status: number, message?: string, headers?: Record<string, string>) => ({ status, json: providerErrorBody('openai', status, message), ...(headers ? { headers } : {}) });

describe('llm-retry with the real openai SDK against the fixture server', () => {
  it('500 twice, then a real stream: one completed turn and exactly two llm/retry events (attempt 1 and 2, SERVER)', async () => {
    const { harness, server } = await start({ maxRetries: 3, initialDelayMs: 10, maxDelayMs: 1000, jitterRatio: 0 });
    server.enqueue(error(500), error(500), TEXT);
    const session = await harness.createSession();
    const events = await collect(session.run('weather?', { approve: allow }));
    expect(ofType(events, 'turn/end').map((e) => e.data.reason)).toEqual(['completed']);
    const retries = ofType(events, 'llm/retry').map((e) => e.data);
    expect(retries).toHaveLength(2);
    expect(retries.map((r) => [r.turn, r.step, r.attempt, r.maxRetries, r.delayMs, r.failure.code, r.failure.status])).toEqual([
      [1, 1, 1, 3, 10, 'SERVER', 500],
      [1, 1, 2, 3, 20, 'SERVER', 500],
    ]);
    // One step, one assistant message (the failed attempts put nothing in the history).
    expect(ofType(events, 'step/start')).toHaveLength(1);
    const messages = ofType(events, 'assistant/message');
    expect(messages).toHaveLength(1);
    expect(messages[0]!.data.message.content).toEqual([{ type: 'text', text: TEXT_ANSWER }]);
    expect(messages[0]!.data.usage).toMatchObject({ inputTokens: 14, outputTokens: 30 });
    expect(server.requests).toHaveLength(3);
    // Each attempt sent the same history; the SDK made no retries of its own (3 requests for 3 attempts).
    expect(server.requests[1]!.body.messages).toEqual(server.requests[0]!.body.messages);
    expect(server.requests[2]!.body.messages).toEqual(server.requests[0]!.body.messages);
    // llm/retry is journaled before the wait, i.e. before the next attempt's chunks.
    const order = events
      .filter((e) => e.type === 'llm/retry' || (e.type === 'assistant/chunk' && e.data.chunk.type === 'finish'))
      .map((e) => (e.type === 'llm/retry' ? 'retry' : (e.data as { chunk: { finish: { kind: string } } }).chunk.finish.kind));
    expect(order).toEqual(['error', 'retry', 'error', 'retry', 'stop']);
  });

  it("429 with retry-after: 2 → the wait is the provider's 2000 ms, not the local backoff", async () => {
    const { harness, server } = await start({ maxRetries: 3, initialDelayMs: 10, maxDelayMs: 5000, jitterRatio: 0 });
    server.enqueue(error(429, undefined, { 'retry-after': '2' }), TEXT);
    const session = await harness.createSession();
    const times: Record<string, number> = {};
    const events = await collect(session.run('weather?', { approve: allow }), (event) => {
      if (event.type === 'llm/retry') times.retry = performance.now();
    });
    const done = performance.now();
    expect(ofType(events, 'turn/end')[0]!.data.reason).toBe('completed');
    const retries = ofType(events, 'llm/retry').map((e) => e.data);
    expect(retries.map((r) => [r.attempt, r.delayMs, r.failure.code, r.failure.providerRetryAfterMs])).toEqual([[1, 2000, 'RATE_LIMIT', 2000]]);
    expect(done - times.retry!).toBeGreaterThanOrEqual(1950);
    expect(server.requests).toHaveLength(2);
  });

  it('retry-after beyond maxDelayMs → a visible failure at once (RATE_LIMIT, says why), no wait, no retry', async () => {
    const { harness, server } = await start({ maxRetries: 3, initialDelayMs: 10, maxDelayMs: 5000, jitterRatio: 0 });
    server.enqueue(error(429, undefined, { 'retry-after': '60' }), TEXT);
    const session = await harness.createSession();
    const began = performance.now();
    const events = await collect(session.run('weather?', { approve: allow }));
    expect(performance.now() - began).toBeLessThan(1000);
    expect(ofType(events, 'llm/retry')).toHaveLength(0);
    const end = ofType(events, 'turn/end')[0]!.data;
    expect(end.reason).toBe('error');
    expect(end.failure?.code).toBe('RATE_LIMIT');
    expect(end.failure?.providerRetryAfterMs).toBe(60_000);
    expect(end.failure?.message).toContain('Rate limit reached for requests');
    expect(end.failure?.message).toContain('retry after 60.0 s, beyond the retry limit of 5 s (maxDelayMs)');
    expect(server.requests).toHaveLength(1);
    expect(server.pending).toBe(1);
  });

  it('401 → no retry: zero llm/retry, the turn ends error with AUTH', async () => {
    const { harness, server } = await start({ mode: 'always', maxRetries: 3, initialDelayMs: 10, jitterRatio: 0 });
    server.enqueue(error(401), TEXT);
    const session = await harness.createSession();
    const events = await collect(session.run('weather?', { approve: allow }));
    expect(ofType(events, 'llm/retry')).toHaveLength(0);
    const end = ofType(events, 'turn/end')[0]!.data;
    expect([end.reason, end.failure?.code, end.failure?.status]).toEqual(['error', 'AUTH', 401]);
    expect(server.requests).toHaveLength(1);
  });

  it('an abort during the backoff wait ends the turn aborted promptly', async () => {
    const { harness, server } = await start({ maxRetries: 3, initialDelayMs: 20_000, maxDelayMs: 30_000, jitterRatio: 0 });
    server.enqueue(error(500), TEXT);
    const session = await harness.createSession();
    const controller = new AbortController();
    let abortedAt = 0;
    const events = await collect(session.run('weather?', { approve: allow, signal: controller.signal }), (event) => {
      if (event.type === 'llm/retry') {
        setTimeout(() => {
          abortedAt = performance.now();
          controller.abort();
        }, 50);
      }
    });
    const endedAt = performance.now();
    expect(abortedAt).toBeGreaterThan(0);
    expect(endedAt - abortedAt).toBeLessThan(500);
    expect(ofType(events, 'llm/retry').map((e) => e.data.delayMs)).toEqual([20_000]);
    const end = ofType(events, 'turn/end')[0]!.data;
    expect([end.reason, end.failure?.code]).toEqual(['aborted', 'ABORTED']);
    expect(server.requests).toHaveLength(1);
    expect(ofType(events, 'assistant/message')).toHaveLength(0);
  });

  it('a tool call executed before the failure is not executed again', async () => {
    const { harness, server } = await start({ maxRetries: 3, initialDelayMs: 10, jitterRatio: 0 });
    const ran: string[] = [];
    harness.ctx.tools.register(
      defineTool({
        name: 'get_weather',
        description: 'The weather of a city.',
        input: z.object({ city: z.string(), state: z.string() }),
        permission: 'read',
        execute: ({ city, state }) => {
          ran.push(`${city}, ${state}`);
          return 'Foggy, 14 °C';
        },
      }),
    );
    // Step 1: a tool call; step 2: a 500, then the text reply.
    server.enqueue('openai-chat/single-tool-call-get-weather.sse', error(500), TEXT);
    const session = await harness.createSession();
    const events = await collect(session.run('weather in SF?', { approve: allow }));
    expect(ofType(events, 'turn/end')[0]!.data.reason).toBe('completed');
    expect(ran).toEqual(['San Francisco, CA']);
    expect(ofType(events, 'tool/call')).toHaveLength(1);
    expect(ofType(events, 'tool/start')).toHaveLength(1);
    expect(ofType(events, 'tool/result')).toHaveLength(1);
    expect(ofType(events, 'llm/retry').map((e) => [e.data.step, e.data.attempt, e.data.failure.code])).toEqual([[2, 1, 'SERVER']]);
    expect(ofType(events, 'step/start').map((e) => e.data.step)).toEqual([1, 2]);
    // The retried request carries the tool result once, exactly as the failed one did.
    expect(server.requests).toHaveLength(3);
    const toolMessages = (i: number) => (server.requests[i]!.body.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'tool');
    expect(toolMessages(1)).toEqual([{ role: 'tool', tool_call_id: 'call_CTf1nWJLqSeRgDqaCG27xZ74', content: 'Foggy, 14 °C' }]);
    expect(server.requests[2]!.body.messages).toEqual(server.requests[1]!.body.messages);
    expect(session.state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('`always` mode retries a code the policy does not list; `normal` mode does not', async () => {
    const always = await start({ mode: 'always', maxRetries: 2, initialDelayMs: 10, jitterRatio: 0 });
    always.server.enqueue(error(400), TEXT);
    const session = await always.harness.createSession();
    const events = await collect(session.run('weather?', { approve: allow }));
    expect(ofType(events, 'llm/retry').map((e) => [e.data.attempt, e.data.failure.code])).toEqual([[1, 'INVALID_REQUEST']]);
    expect(ofType(events, 'turn/end')[0]!.data.reason).toBe('completed');
    await always.close();

    const normal = await start({ maxRetries: 2, initialDelayMs: 10, jitterRatio: 0 });
    normal.server.enqueue(error(400), TEXT);
    const other = await normal.harness.createSession();
    const failed = await collect(other.run('weather?', { approve: allow }));
    expect(ofType(failed, 'llm/retry')).toHaveLength(0);
    expect(ofType(failed, 'turn/end')[0]!.data).toMatchObject({ reason: 'error', failure: { code: 'INVALID_REQUEST', status: 400 } });
  });

  it('maxRetries exhausted → the turn ends with the last error, visible', async () => {
    const { harness, server } = await start({ maxRetries: 2, initialDelayMs: 5, jitterRatio: 0 });
    server.enqueue(error(500, 'first failure'), error(500, 'second failure'), error(500, 'third failure'), TEXT);
    const session = await harness.createSession();
    const events = await collect(session.run('weather?', { approve: allow }));
    expect(ofType(events, 'llm/retry').map((e) => [e.data.attempt, e.data.maxRetries, e.data.delayMs, e.data.failure.message])).toEqual([
      [1, 2, 5, 'Provider "fx" (HTTP 500): first failure'],
      [2, 2, 10, 'Provider "fx" (HTTP 500): second failure'],
    ]);
    const end = ofType(events, 'turn/end')[0]!.data;
    expect(end.reason).toBe('error');
    expect(end.failure).toMatchObject({ code: 'SERVER', status: 500, message: 'Provider "fx" (HTTP 500): third failure' });
    expect(server.requests).toHaveLength(3);
    expect(server.pending).toBe(1);
  });

  it('a stream cut mid-body is retried; the partial reply never enters the history', async () => {
    const { harness, server } = await start({ maxRetries: 3, initialDelayMs: 5, jitterRatio: 0 });
    server.enqueue({ fixture: TEXT, closeAfterBytes: 1500 }, TEXT);
    const session = await harness.createSession();
    const events = await collect(session.run('weather?', { approve: allow }));
    expect(ofType(events, 'turn/end')[0]!.data.reason).toBe('completed');
    const retries = ofType(events, 'llm/retry').map((e) => e.data);
    expect(retries).toHaveLength(1);
    expect(['TRANSPORT', 'MALFORMED_RESPONSE']).toContain(retries[0]!.failure.code);
    // The first attempt streamed some text before it broke; only the complete reply is in the history.
    const deltas = ofType(events, 'assistant/chunk').filter((e) => e.data.chunk.type === 'text-delta');
    expect(deltas.length).toBeGreaterThan(ofType(events, 'assistant/chunk').filter((e) => e.seq > ofType(events, 'llm/retry')[0]!.seq && e.data.chunk.type === 'text-delta').length);
    expect(session.state.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(session.state.messages[1]!.content).toEqual([{ type: 'text', text: TEXT_ANSWER }]);
  });

  it('maxRetries 0 never retries', async () => {
    const { harness, server } = await start({ maxRetries: 0, initialDelayMs: 5, jitterRatio: 0 });
    server.enqueue(error(500), TEXT);
    const session = await harness.createSession();
    const events = await collect(session.run('weather?', { approve: allow }));
    expect(ofType(events, 'llm/retry')).toHaveLength(0);
    expect(ofType(events, 'turn/end')[0]!.data).toMatchObject({ reason: 'error', failure: { code: 'SERVER' } });
  });
});

describe('backoffDelayMs', () => {
  const policy = resolveRetryPolicy({ initialDelayMs: 1000, maxDelayMs: 30_000, jitterRatio: 0.2 });

  it('doubles per attempt with ±jitterRatio spread, capped at maxDelayMs', () => {
    // attempt 1: base 1000 → [800, 1200]; attempt 3: base 4000 → [3200, 4800].
    expect([0, 0.5, 0.999999].map((r) => backoffDelayMs(policy, 1, () => r))).toEqual([800, 1000, 1200]);
    expect([0, 0.5, 0.999999].map((r) => backoffDelayMs(policy, 3, () => r))).toEqual([3200, 4000, 4800]);
    // attempt 6: base min(30000, 32000) = 30000 → [24000, 30000] (the upper half is capped).
    expect([0, 0.5, 0.999999].map((r) => backoffDelayMs(policy, 6, () => r))).toEqual([24_000, 30_000, 30_000]);
    // jitter 0: exact; a huge attempt stays finite.
    const exact = resolveRetryPolicy({ initialDelayMs: 250, maxDelayMs: 10_000, jitterRatio: 0 });
    expect([1, 2, 3, 4, 5, 6, 1000].map((a) => backoffDelayMs(exact, a, () => 0.73))).toEqual([250, 500, 1000, 2000, 4000, 8000, 10_000]);
    expect(DEFAULT_RETRY_POLICY.jitterRatio).toBe(0.2);
  });

  it('always within [base·(1−j), min(max, base·(1+j))] (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.integer({ min: 0, max: 5000 }),
        fc.integer({ min: 0, max: 60_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (attempt, random, initialDelayMs, maxDelayMs, jitterRatio) => {
          const p = resolveRetryPolicy({ initialDelayMs, maxDelayMs, jitterRatio });
          const base = Math.min(maxDelayMs, initialDelayMs * 2 ** (attempt - 1));
          const delay = backoffDelayMs(p, attempt, () => random);
          return Number.isInteger(delay) && delay >= Math.floor(base * (1 - jitterRatio)) && delay <= Math.min(maxDelayMs, Math.ceil(base * (1 + jitterRatio)));
        },
      ),
    );
  });
});
