/**
 * Fixture server tests, with the REAL `openai` (6.49) and `@anthropic-ai/sdk` (1.14) clients — no mocks.
 *
 * SDK BEHAVIOUR NOTES for adapter authors (every point is asserted in the "SDK observations" block below;
 * "openai" = openai-node, "anthropic" = @anthropic-ai/sdk; Node 20 global fetch = undici):
 *
 * 1. Mid-stream `event: error` (HTTP 200 already received, some deltas already yielded):
 *    - anthropic (overloaded payload appended after deltas): the deltas are yielded, then iteration throws
 *      `Anthropic.APIError` — the BASE class, NOT `OverloadedError` — with `status === undefined`,
 *      `headers` = the 200 response's Headers, `type === 'overloaded_error'`, `apiMessage === 'Overloaded'`,
 *      `error` = the whole parsed payload `{type:'error', error:{details:null, type, message}}`,
 *      `message` = JSON.stringify of that payload (the padding space is gone). `messages.stream().finalMessage()`
 *      rejects with the same APIError. Partial content is only what you accumulated yourself.
 *    - openai, Groq `event: error` (openai-compatible/groq-…-event-error-tool-use-failed.sse): every reasoning
 *      chunk is yielded, then iteration throws `OpenAI.APIError` (base class) with `status === undefined`,
 *      `headers` = the 200 response's Headers, `message` = error.message ("Tool call validation failed: …"),
 *      `code === 'tool_use_failed'`, `type === 'invalid_request_error'`, `error` = the inner `error` object
 *      (incl. `failed_generation`, `status_code: 400`). openai throws on ANY frame whose JSON has a truthy
 *      `error` key, whatever the `event:` name (so it also throws on the Anthropic payload, message 'Overloaded').
 * 2. Responses `error` event (openai-responses/error-insufficient-quota-then-failed.chunks.jsonl): openai yields
 *    `response.created`, `response.in_progress`, then throws `OpenAI.APIError`, `status === undefined`,
 *    headers present, `message` = "You exceeded your current quota…", `code === 'insufficient_quota'`,
 *    `type === 'insufficient_quota'`. The following `response.failed` event is NEVER seen.
 * 3. SSE comment lines (`: OPENROUTER PROCESSING`, `: keepalive`) are silently skipped by both SDKs.
 * 4. Socket cut mid-stream (server destroys the socket after N body bytes, headers already sent): both SDKs
 *    let undici's raw error through UNWRAPPED: `TypeError('terminated')` whose `cause` is undici
 *    `SocketError('other side closed')`, `cause.code === 'UND_ERR_SOCKET'`. It is NOT an APIError /
 *    APIConnectionError; no status, no headers. Thrown from the iteration (create() itself resolved).
 *    A cut BEFORE the headers (e.g. the server closing during `hang: 'before-headers'`) instead rejects
 *    create() with `APIConnectionError` ("Connection error.", cause TypeError 'fetch failed').
 *    A body that just ENDS cleanly without its terminal frames (no [DONE] / message_stop) ends iteration with
 *    NO error in both SDKs: adapters must detect the missing finish themselves.
 * 5. Abort via `AbortController` (`{ signal }` request option):
 *    - before the headers arrive: create() rejects with `APIUserAbortError` ("Request was aborted.",
 *      no status, no headers). It is a subclass of APIError in both SDKs.
 *    - after the headers (while iterating, with or without events already yielded): BOTH SDKs end the
 *      `for await` SILENTLY — no error at all (`isAbortError` → return). Adapters must check
 *      `signal.aborted` after the loop to tell an abort from a normal end.
 * 6. The SDK `timeout` option only covers the wait for the response HEADERS (fetchWithTimeout clears its timer
 *    once fetch resolves): a stream that stalls after the headers is never timed out by either SDK; an idle
 *    timeout must be implemented by the adapter. Before the headers, the timeout rejects create() with
 *    `APIConnectionTimeoutError` ("Request timed out.").
 * 7. HTTP errors (status >= 400 before any stream): create() rejects with the status class, all subclasses of
 *    APIError with `status` and `headers` (a fetch `Headers`; `headers.get('retry-after') === '7'`):
 *    openai 429 → `RateLimitError`, 401 → `AuthenticationError`, 500 → `InternalServerError`;
 *    anthropic 429 → `RateLimitError`, 401 → `AuthenticationError`, 529 → `OverloadedError` (extends
 *    InternalServerError), with `type` = body.error.type. openai's message is "<status> <error.message>";
 *    anthropic's is "<status> <JSON body>".
 * 8. Class-name caveat: openai error instances have `name === 'Error'` (use `instanceof OpenAI.APIError` or
 *    `constructor.name`), anthropic ones have `name` = the class name.
 * 9. A LAST frame with no terminating blank line is silently DROPPED by both SDKs (their SSE decoder only emits
 *    on an empty line). anthropic/text-then-tool-use-input-json-delta.sse and anthropic/max-tokens-mid-tool-use.sse
 *    end that way, so their `message_stop` is never yielded: the last event is `message_delta`. Adapters must
 *    not require `message_stop` (or OpenAI's trailing usage chunk / [DONE]) to finish a turn.
 * 10. Request shape: openai sends `authorization: Bearer <apiKey>`; @anthropic-ai/sdk 1.14 ALSO sends the apiKey
 *    as `authorization: Bearer <apiKey>` (no `x-api-key`) plus `anthropic-version: 2026-10-21`. Paths:
 *    `/v1/chat/completions`, `/v1/responses` (baseURL `<url>/v1`), `/v1/messages` (baseURL `<url>`).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  fixturePath,
  fixturesDir,
  fixtureToSse,
  inferWrapMode,
  projectRoot,
  providerErrorBody,
  readFixture,
  repeatSseFrames,
  splitResponsesBodies,
  splitSseFrames,
  sseFrame,
  startFixtureServer,
  type FixtureServer,
} from './support/fixture-server.ts';

const MULTISTEP = 'openai-responses/reasoning-encrypted-content-summary-multistep.chunks.jsonl';

let server: FixtureServer;
let openai: OpenAI;
let anthropic: Anthropic;

beforeEach(async () => {
  server = await startFixtureServer();
  openai = new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'test', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'test', maxRetries: 0 });
});
afterEach(async () => {
  await server.close();
});

interface Drained<T> {
  events: T[];
  error: any;
  ms: number;
}

/** Runs `start()` and iterates the stream it returns, collecting events and the first error. */
async function drain<T>(start: () => Promise<AsyncIterable<T>>): Promise<Drained<T>> {
  const events: T[] = [];
  const t0 = Date.now();
  let error: any;
  try {
    for await (const ev of await start()) events.push(ev);
  } catch (e) {
    error = e;
  }
  return { events, error, ms: Date.now() - t0 };
}

const chatStream = (opts: OpenAI.RequestOptions = {}) => drain(() => openai.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'weather in SF?' }], stream: true }, opts));
const responsesStream = (opts: OpenAI.RequestOptions = {}) => drain(() => openai.responses.create({ model: 'gpt-5', input: 'compute', stream: true }, opts));
const messagesStream = (opts: Anthropic.RequestOptions = {}) =>
  drain(() => anthropic.messages.create({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true }, opts));

const abortAfter = (ms: number) => {
  const ac = new AbortController();
  setTimeout(() => ac.abort(), ms);
  return ac.signal;
};

// ---------------------------------------------------------------------------------------------

describe('fixture helpers', () => {
  it('resolves fixtures from ../shared/fixtures relative to the project root (or HARNESS_FIXTURES_DIR)', () => {
    const expected = process.env.HARNESS_FIXTURES_DIR ? path.resolve(process.env.HARNESS_FIXTURES_DIR) : path.resolve(projectRoot, '../shared/fixtures');
    expect(fixturesDir).toBe(expected);
    expect(existsSync(path.join(projectRoot, 'package.json'))).toBe(true);
    expect(fixturePath('anthropic/text-with-ping.chunks.jsonl')).toBe(path.join(fixturesDir, 'provider-streams/anthropic/text-with-ping.chunks.jsonl'));
    expect(existsSync(fixturePath('openai-chat/single-tool-call-get-weather.sse'))).toBe(true);
  });

  it('infers the wrap mode from the folder', () => {
    expect(inferWrapMode('openai-chat/x.chunks.jsonl')).toBe('chat');
    expect(inferWrapMode('deepseek/x.chunks.jsonl')).toBe('chat');
    expect(inferWrapMode('openai-compatible/x.chunks.jsonl')).toBe('chat');
    expect(inferWrapMode('anthropic/x.chunks.jsonl')).toBe('event');
    expect(inferWrapMode('openai-responses/x.chunks.jsonl')).toBe('event');
    expect(() => inferWrapMode('elsewhere/x.chunks.jsonl')).toThrow(/wrap/);
  });

  it('wraps chunk lists into SSE and serves .sse files verbatim', () => {
    const chat = fixtureToSse('openai-compatible/mistral-tool-call-no-index-finish-same-chunk.chunks.jsonl');
    expect(chat.startsWith('data: {')).toBe(true);
    expect(chat.endsWith('\n\ndata: [DONE]\n\n')).toBe(true);
    expect(chat).not.toContain('event:');

    const anth = fixtureToSse('anthropic/text-with-ping.chunks.jsonl');
    expect(anth.startsWith('event: message_start\ndata: {"type":"message_start"')).toBe(true);
    expect(anth).toContain('event: ping\ndata: {"type":"ping"}\n\n');
    expect(anth.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(true);
    expect(anth).not.toContain('[DONE]');

    const raw = 'anthropic/text-then-tool-use-input-json-delta.sse';
    expect(fixtureToSse(raw)).toBe(readFixture(raw));
  });

  it('splits the multi-step Responses file into four bodies at response.created', () => {
    const bodies = splitResponsesBodies(MULTISTEP);
    expect(bodies).toHaveLength(4);
    for (const body of bodies) {
      expect(body.startsWith('event: response.created\n')).toBe(true);
      expect(body.match(/^event: response\.created$/gm)).toHaveLength(1);
      expect(body.trimEnd().split('\n\n').at(-1)).toMatch(/^event: response\.completed\n/);
    }
    expect(bodies.join('')).toBe(fixtureToSse(MULTISTEP));
  });

  it('splitSseFrames round-trips and sseFrame builds frames', () => {
    for (const rel of ['anthropic/thinking-signature-delta-then-text.sse', 'anthropic/text-then-tool-use-input-json-delta.sse']) {
      const body = readFixture(rel);
      expect(splitSseFrames(body).join('')).toBe(body);
    }
    expect(splitSseFrames('data: a\r\n\r\ndata: b\n\n: c\n\nrest')).toEqual(['data: a\r\n\r\n', 'data: b\n\n', ': c\n\n', 'rest']);
    expect(sseFrame({ a: 1 }, 'x')).toBe('event: x\ndata: {"a":1}\n\n');
    expect(sseFrame('[DONE]')).toBe('data: [DONE]\n\n');
  });
});

// ---------------------------------------------------------------------------------------------

describe('fixture server with the real SDKs', () => {
  it('openai chat: streams a recorded tool call and records the request', async () => {
    server.enqueue('openai-chat/single-tool-call-get-weather.sse');
    const { events, error } = await chatStream();
    expect(error).toBeUndefined();

    let id = '';
    let name = '';
    let args = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for (const chunk of events) {
      for (const choice of chunk.choices) {
        for (const tc of choice.delta.tool_calls ?? []) {
          id ||= tc.id ?? '';
          name ||= tc.function?.name ?? '';
          args += tc.function?.arguments ?? '';
        }
        finish = choice.finish_reason ?? finish;
      }
      usage = chunk.usage ?? usage;
    }
    expect(id).toBe('call_CTf1nWJLqSeRgDqaCG27xZ74');
    expect(name).toBe('get_weather');
    expect(JSON.parse(args)).toEqual({ city: 'San Francisco', state: 'CA' });
    expect(finish).toBe('tool_calls');
    expect(usage).toMatchObject({ prompt_tokens: 48, completion_tokens: 19 });

    expect(server.requests).toHaveLength(1);
    const req = server.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer test');
    expect(req.headers['content-type']).toContain('application/json');
    expect(req.body).toMatchObject({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'weather in SF?' }] });
    expect(JSON.parse(req.rawBody)).toEqual(req.body);
  });

  it('anthropic: streams a wrapped chunk list (with ping) and records the request', async () => {
    server.enqueue('anthropic/text-with-ping.chunks.jsonl');
    const { events, error } = await messagesStream();
    expect(error).toBeUndefined();
    const text = events.map((e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? e.delta.text : '')).join('');
    expect(text).toBe("Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?");
    expect(events.some((e) => (e as { type: string }).type === 'ping')).toBe(false);
    const delta = events.find((e) => e.type === 'message_delta');
    expect(delta).toMatchObject({ delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 30 } });
    expect(events.at(-1)?.type).toBe('message_stop');

    const req = server.requests[0]!;
    expect(req.path).toBe('/v1/messages');
    expect(req.headers.authorization).toBe('Bearer test'); // sdk 1.x sends apiKey as a Bearer token (note 10)
    expect(req.headers['x-api-key']).toBeUndefined();
    expect(req.headers['anthropic-version']).toBeTruthy();
    expect(req.body).toMatchObject({ model: 'claude-test', max_tokens: 100, stream: true });
  });

  it('openai responses: iterates each of the four split bodies', async () => {
    for (let part = 0; part < 4; part++) server.enqueue({ fixture: MULTISTEP, part });
    const expectedCalls = [
      { a: 12, b: 7, op: 'add' },
      { a: 19, b: 3, op: 'multiply' },
      { a: 57, b: 10, op: 'multiply' },
    ];
    const expectedUsage = [
      [134, 28],
      [221, 26],
      [260, 26],
      [299, 12],
    ];
    for (let step = 0; step < 4; step++) {
      const { events, error } = await responsesStream();
      expect(error).toBeUndefined();
      expect(events[0]?.type).toBe('response.created');
      const done = events.at(-1);
      expect(done?.type).toBe('response.completed');
      if (done?.type !== 'response.completed') throw new Error('unreachable');
      expect(done.response.usage).toMatchObject({
        input_tokens: expectedUsage[step]![0],
        output_tokens: expectedUsage[step]![1],
      });
      const call = done.response.output.find((o) => o.type === 'function_call');
      if (step < 3) {
        expect(call?.type === 'function_call' && call.name).toBe('calculator');
        expect(call?.type === 'function_call' && JSON.parse(call.arguments)).toEqual(expectedCalls[step]);
      } else {
        expect(call).toBeUndefined();
        const text = events.map((e) => (e.type === 'response.output_text.delta' ? e.delta : '')).join('');
        expect(text).toBe('The final result is **570**.');
      }
      if (step === 0) {
        expect(events.some((e) => e.type === 'response.reasoning_summary_text.delta')).toBe(true);
        const rs = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'reasoning');
        expect(rs?.type === 'response.output_item.done' && rs.item.type === 'reasoning' && rs.item.encrypted_content?.length).toBe(1060);
      }
    }
    expect(server.requests.map((r) => r.path)).toEqual(Array(4).fill('/v1/responses'));
  });

  it('serves the queue in FIFO order, then the default, then a visible 500', async () => {
    server.enqueue('openai-chat/finish-length-max-tokens-1.sse', 'openai-chat/single-tool-call-get-weather.sse');
    expect(server.pending).toBe(2);
    const first = await chatStream();
    const second = await chatStream();
    expect(first.events.at(-1)?.usage?.completion_tokens).toBe(1);
    expect(second.events.at(-1)?.usage?.completion_tokens).toBe(19);
    expect(server.pending).toBe(0);

    const empty = await chatStream();
    expect(empty.error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(empty.error.status).toBe(500);
    expect(empty.error.message).toContain('fixture server: no response queued');

    const emptyAnthropic = await messagesStream();
    expect(emptyAnthropic.error).toBeInstanceOf(Anthropic.InternalServerError);
    expect(emptyAnthropic.error.message).toContain('fixture server: no response queued');

    server.setDefault('openai-chat/finish-length-max-tokens-1.sse');
    expect((await chatStream()).error).toBeUndefined();
    expect((await chatStream()).error).toBeUndefined();
    server.setDefault(undefined);
    expect((await chatStream()).error?.status).toBe(500);
  });

  it('a forgotten enqueue fails fast even with SDK retries enabled (x-should-retry: false)', async () => {
    const retrying = new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'test', maxRetries: 2 });
    await expect(retrying.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    expect(server.requests).toHaveLength(1);
  });

  it('429 with retry-after reaches openai as RateLimitError with status and header', async () => {
    server.enqueue({ status: 429, headers: { 'retry-after': '7' }, json: providerErrorBody('openai', 429) });
    const { error, events } = await chatStream();
    expect(events).toHaveLength(0);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.status).toBe(429);
    expect(error.headers.get('retry-after')).toBe('7');
    expect(error.headers.get('content-type')).toBe('application/json');
    expect(error.code).toBe('rate_limit_exceeded');
    expect(error.message).toBe('429 Rate limit reached for requests. Please try again in 7s.');
  });

  it('provider-shaped 401 / 429 / 529 / 500 errors reach the SDKs as their status classes', async () => {
    server.enqueue(
      { status: 401, json: providerErrorBody('anthropic', 401) },
      { status: 429, headers: { 'retry-after': '7' }, json: providerErrorBody('anthropic', 429) },
      { status: 529, json: providerErrorBody('anthropic', 529) },
    );
    const e401 = (await messagesStream()).error;
    expect(e401).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(e401).toMatchObject({ status: 401, type: 'authentication_error', name: 'AuthenticationError' });
    const e429 = (await messagesStream()).error;
    expect(e429).toBeInstanceOf(Anthropic.RateLimitError);
    expect(e429.headers.get('retry-after')).toBe('7');
    const e529 = (await messagesStream()).error;
    expect(e529).toBeInstanceOf(Anthropic.InternalServerError);
    expect(e529.constructor.name).toBe('OverloadedError');
    expect(e529).toMatchObject({ status: 529, type: 'overloaded_error' });
    expect(e529.message).toBe('529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fixture_server"}');

    server.enqueue({ status: 401, json: providerErrorBody('openai', 401) }, { status: 500, body: '{"error":{"message":"boom","type":"server_error","param":null,"code":null}}' });
    const o401 = (await chatStream()).error;
    expect(o401).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(o401).toMatchObject({ status: 401, code: 'invalid_api_key' });
    const o500 = (await chatStream()).error;
    expect(o500).toBeInstanceOf(OpenAI.InternalServerError);
    expect(o500.headers.get('content-type')).toBe('application/json'); // inferred for an error body that parses
    expect(o500.message).toBe('500 boom');
  });

  it('closeAfterBytes cuts the socket: the SDK iteration throws after the bytes it got', async () => {
    const rel = 'openai-chat/single-tool-call-get-weather.sse';
    const frames = splitSseFrames(readFixture(rel));
    const twoFrames = Buffer.byteLength(frames[0]! + frames[1]!);
    server.enqueue({ fixture: rel, closeAfterBytes: twoFrames + 20 });
    const { events, error } = await chatStream();
    expect(events).toHaveLength(2);
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe('terminated');

    server.enqueue({ fixture: 'anthropic/text-with-ping.chunks.jsonl', closeAfterBytes: 1000 });
    const a = await messagesStream();
    expect(a.events.length).toBeGreaterThan(0);
    expect(a.error).toBeInstanceOf(TypeError);
    expect(a.error.cause?.code).toBe('UND_ERR_SOCKET');
  });

  it('frameDelayMs spaces the SSE frames out', async () => {
    server.enqueue({ fixture: 'anthropic/text-with-ping.chunks.jsonl', frameDelayMs: 25 }); // 12 frames
    const arrivals: number[] = [];
    const t0 = Date.now();
    const stream = await anthropic.messages.create({
      model: 'm',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    for await (const _ of stream) arrivals.push(Date.now() - t0);
    expect(arrivals).toHaveLength(11); // the ping is swallowed by the SDK
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(200);
  });

  it('hang + AbortController: the request ends promptly', async () => {
    server.enqueue({ hang: true });
    const chat = await chatStream({ signal: abortAfter(100) });
    expect(chat.ms).toBeLessThan(2000);
    expect(chat.error).toBeUndefined(); // after headers: silent end (see note 5)
    expect(chat.events).toHaveLength(0);

    server.enqueue({ hang: 'before-headers' });
    const anth = await messagesStream({ signal: abortAfter(100) });
    expect(anth.ms).toBeLessThan(2000);
    expect(anth.error).toBeInstanceOf(Anthropic.APIUserAbortError);
  });

  it('close() does not hang with open hanging responses, and in-flight clients fail', async () => {
    server.enqueue({ hang: true }, { hang: 'before-headers' });
    const afterHeaders = chatStream();
    const beforeHeaders = messagesStream();
    while (server.requests.length < 2) await new Promise((r) => setTimeout(r, 5));
    const t0 = Date.now();
    await server.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    expect((await afterHeaders).error).toBeInstanceOf(TypeError); // 'terminated'
    expect((await beforeHeaders).error).toBeInstanceOf(Anthropic.APIConnectionError);
    await server.close(); // idempotent
  });

  it('repeatSseFrames keeps the OpenAI parallel tool call stream valid with n× the chunks', async () => {
    const rel = 'openai-chat/parallel-tool-calls-weather-and-stock.sse';
    const original = splitSseFrames(readFixture(rel)).length;
    const body = repeatSseFrames(readFixture(rel), 3);
    expect(splitSseFrames(body).length).toBe(1 + (original - 4) * 3 + 3); // role + content×3 + finish/usage/[DONE]
    expect(body.match(/\[DONE\]/g)).toHaveLength(1);

    server.enqueue({ fixture: rel, repeat: 3 });
    const completion = await openai.chat.completions.stream({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }).finalChatCompletion();
    const calls = completion.choices[0]!.message.tool_calls!;
    expect(calls).toHaveLength(6);
    expect(new Set(calls.map((c) => c.id)).size).toBe(6);
    expect(calls.map((c) => (c.type === 'function' ? c.function.name : ''))).toEqual(['GetWeatherArgs', 'get_stock_price', 'GetWeatherArgs', 'get_stock_price', 'GetWeatherArgs', 'get_stock_price']);
    for (const c of calls) if (c.type === 'function') expect(() => JSON.parse(c.function.arguments)).not.toThrow();
    expect(calls[4]!.type === 'function' && JSON.parse(calls[4]!.function.arguments)).toEqual({ city: 'Edinburgh', country: 'GB', units: 'c' });
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    expect(completion.usage?.completion_tokens).toBe(60);
  });

  it('repeatSseFrames keeps the Anthropic thinking stream valid with n× the blocks', async () => {
    const rel = 'anthropic/thinking-signature-delta-then-text.sse';
    const body = repeatSseFrames(readFixture(rel), 4);
    expect(body.match(/^event: message_start$/gm)).toHaveLength(1);
    expect(body.match(/^event: message_stop$/gm)).toHaveLength(1);
    expect(body.match(/^event: content_block_start$/gm)).toHaveLength(8);

    server.enqueue({ body });
    const message = await anthropic.messages.stream({ model: 'm', max_tokens: 2000, messages: [{ role: 'user', content: 'x' }] }).finalMessage();
    expect(message.content.map((b) => b.type)).toEqual(Array(4).fill(['thinking', 'text']).flat());
    const thinking = message.content[6]!;
    expect(thinking.type === 'thinking' && thinking.signature.length).toBe(504);
    expect(thinking.type === 'thinking' && thinking.thinking.startsWith('This is a straightforward question about pedestrian safety')).toBe(true);
    const text = message.content[7]!;
    expect(text.type === 'text' && text.text.length).toBe(1021);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.output_tokens).toBe(282);
  });
});

// ---------------------------------------------------------------------------------------------

describe('SDK observations (see the notes at the top of this file)', () => {
  const overloaded = () => readFixture('anthropic/error-event-overloaded.data-payload.fragment.txt').trim();
  /** thinking stream: message_start, block start, ping, 5 thinking deltas, then the overloaded `event: error`. */
  const anthropicWithError = () => splitSseFrames(readFixture('anthropic/thinking-signature-delta-then-text.sse')).slice(0, 8).join('') + sseFrame(overloaded(), 'error');

  it('1a. anthropic: mid-stream event: error → base APIError, no status, headers, type overloaded_error', async () => {
    server.enqueue({ body: anthropicWithError() });
    const { events, error } = await messagesStream();
    expect(events.map((e) => e.type)).toEqual(['message_start', 'content_block_start', ...Array(5).fill('content_block_delta')]);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(error.constructor.name).toBe('APIError');
    expect(error).not.toBeInstanceOf(Anthropic.InternalServerError);
    expect(error.status).toBeUndefined();
    expect(error.headers).toBeInstanceOf(Headers);
    expect(error.headers.get('content-type')).toBe('text/event-stream');
    expect(error.type).toBe('overloaded_error');
    expect(error.apiMessage).toBe('Overloaded');
    expect(error.error).toEqual({ type: 'error', error: { details: null, type: 'overloaded_error', message: 'Overloaded' } });
    expect(error.message).toBe('{"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"}}');

    server.enqueue({ body: anthropicWithError() });
    const helper = anthropic.messages.stream({ model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] });
    const helperError = await helper.finalMessage().catch((e: unknown) => e);
    expect(helperError).toBeInstanceOf(Anthropic.APIError);
    expect((helperError as InstanceType<typeof Anthropic.APIError>).status).toBeUndefined();
  });

  it('1b. openai: Groq event: error → base APIError after all deltas, no status, code tool_use_failed', async () => {
    server.enqueue('openai-compatible/groq-gpt-oss-reasoning-then-event-error-tool-use-failed.sse');
    const { events, error } = await chatStream();
    expect(events.length).toBeGreaterThan(50);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.constructor.name).toBe('APIError');
    expect(error.name).toBe('Error');
    expect(error.status).toBeUndefined();
    expect(error.headers).toBeInstanceOf(Headers);
    expect(error.code).toBe('tool_use_failed');
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toMatch(/^Tool call validation failed: /);
    expect(error.error).toMatchObject({ status_code: 400, failed_generation: expect.stringContaining('get_something_by_name') });

    // openai-node throws on any `data.error`, whatever the event name: the Anthropic payload too.
    server.enqueue({ body: anthropicWithError() });
    const cross = await chatStream();
    expect(cross.error).toBeInstanceOf(OpenAI.APIError);
    expect(cross.error.message).toBe('Overloaded');
  });

  it('2. openai responses: the `error` event throws APIError; response.failed is never seen', async () => {
    server.enqueue('openai-responses/error-insufficient-quota-then-failed.chunks.jsonl');
    const { events, error } = await responsesStream();
    expect(events.map((e) => e.type)).toEqual(['response.created', 'response.in_progress']);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.constructor.name).toBe('APIError');
    expect(error.status).toBeUndefined();
    expect(error.headers).toBeInstanceOf(Headers);
    expect(error.code).toBe('insufficient_quota');
    expect(error.type).toBe('insufficient_quota');
    expect(error.message).toMatch(/^You exceeded your current quota/);
  });

  it('3. comment lines are skipped by both SDKs', async () => {
    server.enqueue('openai-responses/openrouter-reasoning-text-delta.sse');
    const r = await responsesStream();
    expect(readFixture('openai-responses/openrouter-reasoning-text-delta.sse')).toContain(': OPENROUTER PROCESSING');
    expect(r.error).toBeUndefined();
    expect(r.events.at(-1)?.type).toBe('response.completed');

    const withComments = (rel: string) => `: hello\n\n${readFixture(rel).replace(/\n\n/g, '\n\n: keepalive\n\n')}`;
    server.enqueue({ body: withComments('openai-chat/single-tool-call-get-weather.sse') });
    const c = await chatStream();
    expect(c.error).toBeUndefined();
    expect(c.events).toHaveLength(splitSseFrames(readFixture('openai-chat/single-tool-call-get-weather.sse')).length - 1);

    server.enqueue({ body: withComments('anthropic/thinking-signature-delta-then-text.sse') });
    const a = await messagesStream();
    expect(a.error).toBeUndefined();
    expect(a.events.at(-1)?.type).toBe('message_stop');
  });

  it('9. a final frame without its blank-line terminator is silently dropped by both SDKs', async () => {
    // (note 9) These two recordings end without a trailing newline after the message_stop data line.
    for (const rel of ['anthropic/text-then-tool-use-input-json-delta.sse', 'anthropic/max-tokens-mid-tool-use.sse']) {
      expect(readFixture(rel).endsWith('\n')).toBe(false);
      server.enqueue(rel);
      const { events, error } = await messagesStream();
      expect(error).toBeUndefined();
      expect(events.at(-1)?.type).toBe('message_delta'); // message_stop never arrives
    }
    const chat = readFixture('openai-chat/single-tool-call-get-weather.sse').replace(/\n\ndata: \[DONE\]\n\n$/, '');
    server.enqueue({ body: chat });
    const c = await chatStream();
    expect(c.error).toBeUndefined();
    expect(c.events.at(-1)?.usage).toBeUndefined(); // the unterminated usage chunk is lost
    expect(c.events.at(-1)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('4. socket cut: raw undici TypeError("terminated"), cause SocketError UND_ERR_SOCKET, not an APIError', async () => {
    server.enqueue(
      { fixture: 'openai-chat/single-tool-call-get-weather.sse', closeAfterBytes: 0 },
      { fixture: 'openai-responses/function-call-arguments-delta.sse', closeAfterBytes: 1000 },
      { fixture: 'anthropic/text-with-ping.chunks.jsonl', closeAfterBytes: 1000 },
    );
    for (const run of [chatStream, responsesStream, messagesStream] as Array<() => Promise<Drained<unknown>>>) {
      const { error } = await run();
      expect(error).toBeInstanceOf(TypeError);
      expect(error).not.toBeInstanceOf(OpenAI.APIError);
      expect(error).not.toBeInstanceOf(Anthropic.APIError);
      expect(error.message).toBe('terminated');
      expect(error.cause?.constructor?.name).toBe('SocketError');
      expect(error.cause?.message).toBe('other side closed');
      expect(error.cause?.code).toBe('UND_ERR_SOCKET');
      expect(error.status).toBeUndefined();
    }

    // A body that ends cleanly but early (no finish/[DONE], no message_stop) is NOT an error for the SDKs.
    const chatFrames = splitSseFrames(readFixture('openai-chat/single-tool-call-get-weather.sse'));
    const anthFrames = splitSseFrames(readFixture('anthropic/thinking-signature-delta-then-text.sse'));
    server.enqueue({ body: chatFrames.slice(0, 3).join('') }, { body: anthFrames.slice(0, 6).join('') });
    const shortChat = await chatStream();
    expect(shortChat.error).toBeUndefined();
    expect(shortChat.events).toHaveLength(3);
    const shortAnth = await messagesStream();
    expect(shortAnth.error).toBeUndefined();
    expect(shortAnth.events).toHaveLength(5);
  });

  it('5. abort: before headers → APIUserAbortError; after headers / mid-stream → silent end', async () => {
    server.enqueue({ hang: 'before-headers' }, { hang: 'before-headers' });
    const o = await chatStream({ signal: abortAfter(50) });
    expect(o.error).toBeInstanceOf(OpenAI.APIUserAbortError);
    expect(o.error).toBeInstanceOf(OpenAI.APIError);
    expect(o.error.name).toBe('Error');
    expect(o.error.message).toBe('Request was aborted.');
    expect(o.error.status).toBeUndefined();
    expect(o.error.headers).toBeUndefined();
    const a = await messagesStream({ signal: abortAfter(50) });
    expect(a.error).toBeInstanceOf(Anthropic.APIUserAbortError);
    expect(a.error.name).toBe('APIUserAbortError');
    expect(a.error.status).toBeUndefined();

    // Headers sent, then part of the body, then a stall: the abort ends the loop without any error.
    server.enqueue(
      { hang: true },
      { fixture: 'openai-chat/single-tool-call-get-weather.sse', closeAfterBytes: 700, hang: true },
      { fixture: 'anthropic/text-with-ping.chunks.jsonl', closeAfterBytes: 1200, hang: true },
      { fixture: MULTISTEP, part: 3, closeAfterBytes: 3000, hang: true },
    );
    const quiet = [
      await messagesStream({ signal: abortAfter(100) }),
      await chatStream({ signal: abortAfter(100) }),
      await messagesStream({ signal: abortAfter(100) }),
      await responsesStream({ signal: abortAfter(100) }),
    ];
    expect(quiet.map((q) => q.error)).toEqual([undefined, undefined, undefined, undefined]);
    expect(quiet[0]!.events).toHaveLength(0);
    for (const q of quiet.slice(1)) expect(q.events.length).toBeGreaterThan(0);
    for (const q of quiet) expect(q.ms).toBeLessThan(2000);
  });

  it('6. the SDK timeout covers the headers only, not a stalled body', async () => {
    server.enqueue({ hang: 'before-headers' }, { hang: 'before-headers' });
    const o = await chatStream({ timeout: 100 });
    expect(o.error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect(o.error.message).toBe('Request timed out.');
    const a = await messagesStream({ timeout: 100 });
    expect(a.error).toBeInstanceOf(Anthropic.APIConnectionTimeoutError);

    server.enqueue({ hang: true }, { hang: true });
    const oStall = await chatStream({ timeout: 100, signal: abortAfter(600) });
    expect(oStall.ms).toBeGreaterThanOrEqual(550); // the 100 ms timeout did not fire
    expect(oStall.error).toBeUndefined();
    const aStall = await messagesStream({ timeout: 100, signal: abortAfter(600) });
    expect(aStall.ms).toBeGreaterThanOrEqual(550);
    expect(aStall.error).toBeUndefined();
  });
});
