/**
 * Loopback HTTP provider server for tests: points the REAL `openai` and `@anthropic-ai/sdk` clients
 * at recorded provider bodies (SSE), served byte for byte. `harness-runtime/testing` exports it, and
 * Harness's own suite uses the same implementation.
 *
 * ```ts
 * const server = await startFixtureServer({ fixturesDir: 'test/fixtures' });   // where fixture paths resolve
 * const openai = new OpenAI({ baseURL: server.openaiBaseURL, apiKey: 'test', maxRetries: 0 });
 * const anthropic = new Anthropic({ baseURL: server.anthropicBaseURL, apiKey: 'test', maxRetries: 0 });
 *
 * server.enqueue('openai-chat/single-tool-call-get-weather.sse');            // raw .sse, served as-is
 * server.enqueue('anthropic/text-with-ping.chunks.jsonl');                    // chunk list, wrap inferred from folder
 * server.enqueue({ fixture: 'openai-responses/reasoning-encrypted-content-summary-multistep.chunks.jsonl', part: 1 });
 * server.enqueue({ status: 429, headers: { 'retry-after': '7' }, json: providerErrorBody('openai', 429) });
 * server.enqueue({ fixture: 'openai-chat/text-with-include-usage.sse', closeAfterBytes: 500 });
 * server.enqueue({ body: sseFrame({ type: 'ping' }, 'ping') });               // an inline body, no file
 * server.enqueue({ hang: true });                                             // headers, then silence
 * ...
 * server.requests[0].body.model;  // every request is recorded (method, path, headers, raw + parsed body)
 * await server.close();           // never hangs: open sockets are destroyed
 * ```
 *
 * Fixture paths are relative to the `fixturesDir` given (to the server, or as the last argument of
 * the reader functions); absolute paths need none. A `.chunks.jsonl` file (one provider JSON chunk a
 * line) is wrapped into SSE by the convention of its top folder (`openai-chat`, `deepseek`,
 * `openai-compatible`: `data:` frames and `[DONE]`; `anthropic`, `openai-responses`: `event:` frames).
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';

// ---------------------------------------------------------------------------------------------
// Fixture locations and readers
// ---------------------------------------------------------------------------------------------

/**
 * How a `.chunks.jsonl` line becomes an SSE frame.
 * - `chat`:  `data: <line>\n\n` per line, then `data: [DONE]\n\n` (OpenAI Chat and OpenAI-compatible).
 * - `event`: `event: <json.type>\ndata: <line>\n\n` per line (Anthropic Messages, OpenAI Responses).
 */
export type WrapMode = 'chat' | 'event';

/**
 * Absolute path of a fixture: `rel` resolved from `fixturesDir` (absolute paths pass through).
 * @throws Error when `rel` is relative and no `fixturesDir` is given.
 */
export function fixturePath(rel: string, fixturesDir?: string): string {
  if (path.isAbsolute(rel)) return rel;
  if (fixturesDir === undefined)
    throw new Error(`fixture-server: "${rel}" is a relative fixture path but no fixturesDir was given; pass fixturesDir (to startFixtureServer or this function) or an absolute path`);
  return path.resolve(fixturesDir, rel);
}

/** The fixture file's text (UTF-8), exactly as stored. */
export function readFixture(rel: string, fixturesDir?: string): string {
  return readFileSync(fixturePath(rel, fixturesDir), 'utf8');
}

/** Wrap mode implied by a fixture's top folder; throws for folders with no known convention. */
export function inferWrapMode(rel: string, fixturesDir?: string): WrapMode {
  const relative = fixturesDir === undefined ? rel : path.relative(fixturesDir, fixturePath(rel, fixturesDir));
  const parts = relative.split(/[\\/]/);
  const known = (top: string | undefined): WrapMode | undefined =>
    top === 'openai-chat' || top === 'deepseek' || top === 'openai-compatible' ? 'chat' : top === 'anthropic' || top === 'openai-responses' ? 'event' : undefined;
  // The top folder under fixturesDir; for an absolute path, the nearest folder with a known name.
  const mode =
    fixturesDir === undefined && path.isAbsolute(rel)
      ? parts
          .slice(0, -1)
          .reverse()
          .map(known)
          .find((m) => m !== undefined)
      : known(parts[0]);
  if (mode) return mode;
  throw new Error(`fixture-server: cannot infer wrap mode for "${rel}"; pass wrap: 'chat' | 'event'`);
}

function chunkLines(rel: string, fixturesDir?: string): string[] {
  return readFixture(rel, fixturesDir)
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '');
}

function wrapLines(lines: string[], wrap: WrapMode): string {
  if (wrap === 'chat') return `${lines.map((line) => `data: ${line}\n\n`).join('')}data: [DONE]\n\n`;
  return lines
    .map((line) => {
      const type = (JSON.parse(line) as { type?: unknown }).type;
      if (typeof type !== 'string') throw new Error(`fixture-server: chunk without a string "type": ${line.slice(0, 120)}`);
      return `event: ${type}\ndata: ${line}\n\n`;
    })
    .join('');
}

/**
 * The fixture as an SSE body: `.sse` files verbatim; `.chunks.jsonl` files wrapped per `wrap`
 * (default: inferred from the folder). Other files are returned verbatim.
 */
export function fixtureToSse(rel: string, wrap?: WrapMode, fixturesDir?: string): string {
  if (!rel.endsWith('.chunks.jsonl')) return readFixture(rel, fixturesDir);
  return wrapLines(chunkLines(rel, fixturesDir), wrap ?? inferWrapMode(rel, fixturesDir));
}

/**
 * Splits a multi-response Responses chunk list (e.g.
 * `openai-responses/reasoning-encrypted-content-summary-multistep.chunks.jsonl`, 4 responses)
 * at each `response.created` line and returns one event-wrapped SSE body per response.
 */
export function splitResponsesBodies(rel: string, wrap: WrapMode = 'event', fixturesDir?: string): string[] {
  const groups: string[][] = [];
  for (const line of chunkLines(rel, fixturesDir)) {
    const type = (JSON.parse(line) as { type?: unknown }).type;
    if (type === 'response.created' || groups.length === 0) groups.push([]);
    groups[groups.length - 1]!.push(line);
  }
  return groups.map((lines) => wrapLines(lines, wrap));
}

// ---------------------------------------------------------------------------------------------
// SSE frame helpers
// ---------------------------------------------------------------------------------------------

/** Line terminator (CRLF, LF or lone CR) twice: an SSE frame boundary. */
const FRAME_BOUNDARY = /(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r(?!\n))/g;

/**
 * Splits an SSE body into frames at blank-line boundaries. Each frame keeps its terminator,
 * so `splitSseFrames(body).join('') === body`. A trailing unterminated remainder is the last frame.
 */
export function splitSseFrames(body: string): string[] {
  const frames: string[] = [];
  let start = 0;
  for (const m of body.matchAll(FRAME_BOUNDARY)) {
    const end = m.index + m[0].length;
    frames.push(body.slice(start, end));
    start = end;
  }
  if (start < body.length) frames.push(body.slice(start));
  return frames;
}

/** Builds one SSE frame: `event: <event>\n` (if given) + `data: <json>\n\n`. Strings are sent as-is. */
export function sseFrame(data: unknown, event?: string): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  const dataLines = text
    .split(/\r?\n/)
    .map((l) => `data: ${l}`)
    .join('\n');
  return `${event ? `event: ${event}\n` : ''}${dataLines}\n\n`;
}

interface ParsedFrame {
  raw: string;
  event: string | null;
  data: string | null;
  json: any;
}

function parseFrame(raw: string): ParsedFrame {
  let event: string | null = null;
  const data: string[] = [];
  for (const line of raw.split(/\r\n|\n|\r/)) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  const joined = data.length ? data.join('\n') : null;
  let json: any;
  if (joined !== null && joined !== '[DONE]') {
    try {
      json = JSON.parse(joined);
    } catch {
      json = undefined;
    }
  }
  return { raw, event, data: joined, json };
}

function terminated(raw: string): string {
  return /(?:\r\n|\n|\r)(?:\r\n|\n|\r)$/.test(raw) ? raw : raw.replace(/(?:\r\n|\n|\r)?$/, '\n\n');
}

/**
 * Repeats the content frames of an SSE body so the stream carries ~`n` times the chunks while
 * staying ONE valid stream for its provider (for benchmarks). Supported bodies:
 * - OpenAI Chat: leading role-only frames once; content frames `n` times (later copies lose `role`,
 *   tool calls get shifted indexes and suffixed ids `<id>_r<k>`); frames with a `finish_reason`, the
 *   `choices: []` usage frame and `[DONE]` once at the end.
 * - Anthropic Messages: `message_start` (and anything before the first block) once; every
 *   `content_block_*` frame (and pings between blocks) `n` times with fresh indexes (tool_use ids
 *   suffixed `_r<k>`); `message_delta` / `message_stop` once at the end.
 * Unmodified frames of the first copy are kept byte for byte. Verified against
 * `openai-chat/parallel-tool-calls-weather-and-stock.sse` and `anthropic/thinking-signature-delta-then-text.sse`.
 */
export function repeatSseFrames(body: string | Buffer, n: number): string {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (!Number.isInteger(n) || n < 1) throw new Error(`repeatSseFrames: n must be an integer >= 1, got ${n}`);
  const frames = splitSseFrames(text).map(parseFrame);
  if (n === 1) return text;
  if (frames.some((f) => f.json?.type === 'message_start')) return repeatAnthropic(frames, n);
  if (frames.some((f) => f.json?.object === 'chat.completion.chunk')) return repeatOpenAIChat(frames, n);
  throw new Error('repeatSseFrames: only OpenAI Chat and Anthropic Messages bodies are supported');
}

function repeatOpenAIChat(frames: ParsedFrame[], n: number): string {
  const isTerminal = (f: ParsedFrame): boolean => f.data === '[DONE]' || (Array.isArray(f.json?.choices) && (f.json.choices.length === 0 || f.json.choices.some((c: any) => c.finish_reason != null)));
  const isRoleOnly = (f: ParsedFrame): boolean => {
    const c = f.json?.choices;
    if (!Array.isArray(c) || c.length !== 1) return false;
    const d = c[0].delta ?? {};
    return 'role' in d && Object.entries(d).every(([k, v]) => k === 'role' || v === null || v === '' || (Array.isArray(v) && v.length === 0));
  };
  let i = 0;
  const head: ParsedFrame[] = [];
  while (i < frames.length && (isRoleOnly(frames[i]!) || !frames[i]!.json)) head.push(frames[i++]!);
  const rest = frames.slice(i);
  const content = rest.filter((f) => !isTerminal(f));
  const tail = rest.filter((f) => isTerminal(f));
  let toolSlots = 0;
  for (const f of content) for (const c of f.json?.choices ?? []) for (const tc of c.delta?.tool_calls ?? []) toolSlots = Math.max(toolSlots, (tc.index ?? 0) + 1);

  const out: string[] = head.map((f) => terminated(f.raw));
  for (let r = 0; r < n; r++) {
    for (const f of content) {
      if (r === 0 || !f.json) {
        out.push(terminated(f.raw));
        continue;
      }
      const json = structuredClone(f.json);
      for (const c of json.choices ?? []) {
        if (!c.delta) continue;
        delete c.delta.role;
        for (const tc of c.delta.tool_calls ?? []) {
          tc.index = (tc.index ?? 0) + r * toolSlots;
          if (typeof tc.id === 'string') tc.id = `${tc.id}_r${r}`;
        }
      }
      out.push(sseFrame(json, f.event ?? undefined));
    }
  }
  out.push(...tail.map((f, k) => (k === tail.length - 1 ? f.raw : terminated(f.raw))));
  return out.join('');
}

function repeatAnthropic(frames: ParsedFrame[], n: number): string {
  const firstBlock = frames.findIndex((f) => f.json?.type === 'content_block_start');
  const tailStart = frames.findIndex((f) => f.json?.type === 'message_delta' || f.json?.type === 'message_stop');
  if (firstBlock === -1 || tailStart === -1 || tailStart < firstBlock) {
    throw new Error('repeatSseFrames: Anthropic body needs content_block_start before message_delta/message_stop');
  }
  const head = frames.slice(0, firstBlock);
  const blocks = frames.slice(firstBlock, tailStart);
  const tail = frames.slice(tailStart);
  let slots = 0;
  for (const f of blocks) if (typeof f.json?.index === 'number') slots = Math.max(slots, f.json.index + 1);

  const out: string[] = head.map((f) => terminated(f.raw));
  for (let r = 0; r < n; r++) {
    for (const f of blocks) {
      if (r === 0 || typeof f.json?.index !== 'number') {
        out.push(terminated(f.raw));
        continue;
      }
      const json = structuredClone(f.json);
      json.index += r * slots;
      const block = json.content_block;
      if (block && (block.type === 'tool_use' || block.type === 'server_tool_use') && typeof block.id === 'string') {
        block.id = `${block.id}_r${r}`;
      }
      out.push(sseFrame(json, f.event ?? json.type));
    }
  }
  out.push(...tail.map((f, k) => (k === tail.length - 1 ? f.raw : terminated(f.raw))));
  return out.join('');
}

// ---------------------------------------------------------------------------------------------
// Provider-shaped error bodies
// ---------------------------------------------------------------------------------------------

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const OPENAI_ERRORS: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: 'invalid_request_error', code: null, message: 'Invalid request.' },
  401: {
    type: 'invalid_request_error',
    code: 'invalid_api_key',
    message: 'Incorrect API key provided: test. You can find your API key at https://platform.openai.com/account/api-keys.',
  },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory', message: 'Country, region, or territory not supported' },
  404: { type: 'invalid_request_error', code: 'model_not_found', message: 'The model `missing` does not exist or you do not have access to it.' },
  429: { type: 'requests', code: 'rate_limit_exceeded', message: 'Rate limit reached for requests. Please try again in 7s.' },
  500: { type: 'server_error', code: null, message: 'The server had an error while processing your request. Sorry about that!' },
  503: { type: 'server_error', code: null, message: 'The engine is currently overloaded, please try again later' },
};

/**
 * An error body shaped like the provider's:
 * - openai:    `{"error":{"message","type","param":null,"code"}}`
 * - anthropic: `{"type":"error","error":{"type","message"},"request_id"}` (529 → overloaded_error)
 */
export function providerErrorBody(provider: 'openai' | 'anthropic', status: number, message?: string): unknown {
  if (provider === 'anthropic') {
    const type = ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
    const defaults: Record<string, string> = {
      authentication_error: 'invalid x-api-key',
      rate_limit_error: 'Number of request tokens has exceeded your per-minute rate limit',
      overloaded_error: 'Overloaded',
      api_error: 'Internal server error',
    };
    return {
      type: 'error',
      error: { type, message: message ?? defaults[type] ?? type },
      request_id: 'req_fixture_server',
    };
  }
  const e = OPENAI_ERRORS[status] ?? { type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null, message: `HTTP ${status}` };
  return { error: { message: message ?? e.message, type: e.type, param: null, code: e.code } };
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

/**
 * What the server answers to one request. A plain string is shorthand for `{ fixture: string }`.
 * Body sources (first one set wins): `json`, `body`, `fixture`; none = empty body.
 */
export interface FixtureResponse {
  /** HTTP status, default 200. */
  status?: number;
  /** Extra/overriding response headers (e.g. `{ 'retry-after': '7' }`). */
  headers?: Record<string, string>;
  /** JSON-serialised body; content-type `application/json`. */
  json?: unknown;
  /** Body served byte for byte. Content-type `text/event-stream` (or JSON when status >= 400 and it parses). */
  body?: string | Uint8Array;
  /** Fixture path (relative to the server's `fixturesDir`, or absolute); `.chunks.jsonl` is wrapped into SSE. */
  fixture?: string;
  /** Wrap mode for `.chunks.jsonl`; inferred from the folder when omitted. */
  wrap?: WrapMode;
  /** Pick response #`part` (0-based) of a multi-response chunk list (split at `response.created`). */
  part?: number;
  /** Serve `repeatSseFrames(body, repeat)` instead of the body (benchmarks). */
  repeat?: number;
  /** Delay between SSE frames (split at blank-line boundaries); 0/undefined = one write. */
  frameDelayMs?: number;
  /** Write only the first N body bytes, then destroy the socket (with `hang`: stall instead). */
  closeAfterBytes?: number;
  /**
   * `true`: send the headers (and the body, if one is given, up to `closeAfterBytes`), then never
   * send anything more nor end the response. `'before-headers'`: send nothing at all.
   * Either way the request stays open until the client aborts or the server closes.
   */
  hang?: boolean | 'before-headers';
}

/** One recorded incoming request. */
export interface RecordedRequest {
  method: string;
  /** URL path without query, e.g. `/v1/chat/completions`. */
  path: string;
  /** Full request target, path + query. */
  url: string;
  /** Node's lower-cased request headers. */
  headers: IncomingHttpHeaders;
  /** Raw request body text. */
  rawBody: string;
  /** `JSON.parse(rawBody)`, or `undefined` when empty / not JSON. */
  body: any;
}

export interface FixtureServerOptions {
  /** Folder that relative fixture paths (`enqueue('openai-chat/x.sse')`) resolve from. */
  fixturesDir?: string;
  /** Port to bind on 127.0.0.1; default 0 (ephemeral). */
  port?: number;
  /** Served when the queue is empty (default: a 500 "fixture server: no response queued"). */
  defaultResponse?: FixtureResponse | string;
}

export interface FixtureServer {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  url: string;
  /** `url + '/v1'`: the `baseURL` for `new OpenAI(...)`. */
  openaiBaseURL: string;
  /** `url`: the `baseURL` for `new Anthropic(...)` (the SDK appends `/v1/messages`). */
  anthropicBaseURL: string;
  port: number;
  /** Queue responses (FIFO); each incoming request takes the next one. */
  enqueue(...responses: Array<FixtureResponse | string>): void;
  /** Response used when the queue is empty (`undefined` restores the 500 "no response queued"). */
  setDefault(response: FixtureResponse | string | undefined): void;
  /** Number of queued, not yet served responses. */
  readonly pending: number;
  /** Every request received, in arrival order (live array). */
  requests: RecordedRequest[];
  /** Stops listening, destroys open sockets (hanging responses included), cancels pending writes. */
  close(): Promise<void>;
}

interface PreparedResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer | null;
  frameDelayMs: number;
  closeAfterBytes: number | undefined;
  hang: boolean | 'before-headers';
}

function looksLikeJson(buf: Buffer): boolean {
  try {
    JSON.parse(buf.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

/** Resolves a response spec eagerly (so a missing fixture throws in the test, not in the server). */
function prepare(spec: FixtureResponse | string, fixturesDir: string | undefined): PreparedResponse {
  const r: FixtureResponse = typeof spec === 'string' ? { fixture: spec } : spec;
  const status = r.status ?? 200;
  let body: Buffer | null = null;
  let contentType: string | undefined;
  if (r.json !== undefined) {
    body = Buffer.from(JSON.stringify(r.json));
    contentType = 'application/json';
  } else if (r.body !== undefined) {
    body = typeof r.body === 'string' ? Buffer.from(r.body, 'utf8') : Buffer.from(r.body);
  } else if (r.fixture !== undefined) {
    if (r.part !== undefined) {
      const parts = splitResponsesBodies(r.fixture, r.wrap ?? inferWrapMode(r.fixture, fixturesDir), fixturesDir);
      const picked = parts[r.part];
      if (picked === undefined) throw new Error(`fixture-server: ${r.fixture} has ${parts.length} parts, no part ${r.part}`);
      body = Buffer.from(picked, 'utf8');
    } else if (r.fixture.endsWith('.chunks.jsonl')) {
      body = Buffer.from(fixtureToSse(r.fixture, r.wrap, fixturesDir), 'utf8');
    } else {
      body = readFileSync(fixturePath(r.fixture, fixturesDir));
    }
  }
  if (body && r.repeat !== undefined && r.repeat !== 1) body = Buffer.from(repeatSseFrames(body, r.repeat), 'utf8');
  if (!contentType) contentType = status >= 400 && body && looksLikeJson(body) ? 'application/json' : 'text/event-stream';
  const headers: Record<string, string> = { 'content-type': contentType };
  if (contentType === 'text/event-stream') headers['cache-control'] = 'no-cache';
  for (const [k, v] of Object.entries(r.headers ?? {})) headers[k.toLowerCase()] = v;
  return {
    status,
    headers,
    body,
    frameDelayMs: r.frameDelayMs ?? 0,
    closeAfterBytes: r.closeAfterBytes,
    hang: r.hang ?? false,
  };
}

function noResponseQueued(method: string, url: string): PreparedResponse {
  return {
    status: 500,
    // x-should-retry: both SDKs honour it, so a forgotten enqueue fails fast even with retries on.
    headers: { 'content-type': 'application/json', 'x-should-retry': 'false' },
    body: Buffer.from(
      JSON.stringify({
        type: 'error',
        error: { type: 'fixture_server_error', message: `fixture server: no response queued (${method} ${url})` },
      }),
    ),
    frameDelayMs: 0,
    closeAfterBytes: undefined,
    hang: false,
  };
}

/** Starts the fixture server on 127.0.0.1 (port 0 by default). See the module docstring. */
export async function startFixtureServer(options: FixtureServerOptions = {}): Promise<FixtureServer> {
  const queue: PreparedResponse[] = [];
  const { fixturesDir } = options;
  let fallback: PreparedResponse | undefined = options.defaultResponse ? prepare(options.defaultResponse, fixturesDir) : undefined;
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const wakers = new Set<() => void>();
  let closing = false;

  /** Cancellable sleep: resolves early when the server closes. */
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      wakers.add(wake);
    });

  const gone = (res: ServerResponse) => closing || res.destroyed || res.socket === null || res.socket.destroyed;

  const write = (res: ServerResponse, chunk: Buffer) =>
    new Promise<void>((resolve) => {
      const done = () => {
        res.off('close', done);
        resolve();
      };
      res.once('close', done);
      res.write(chunk, () => done());
    });

  /** Waits until everything written so far has left Node's buffers for the kernel. */
  const drained = async (socket: Socket | null) => {
    for (let i = 0; socket && !socket.destroyed && socket.writableLength > 0 && i < 1000; i++) await sleep(1);
  };

  async function respond(_req: IncomingMessage, res: ServerResponse, p: PreparedResponse): Promise<void> {
    if (p.hang === 'before-headers') return;
    res.writeHead(p.status, p.headers);
    res.flushHeaders();
    const body = p.body ?? Buffer.alloc(0);
    const limit = p.closeAfterBytes === undefined ? body.length : Math.min(p.closeAfterBytes, body.length);
    const toSend = body.subarray(0, limit);
    const frames = p.frameDelayMs > 0 ? splitSseFrames(toSend.toString('latin1')).map((f) => Buffer.from(f, 'latin1')) : toSend.length ? [toSend] : [];
    for (let i = 0; i < frames.length; i++) {
      if (gone(res)) return;
      if (i > 0 && p.frameDelayMs > 0) {
        await sleep(p.frameDelayMs);
        if (gone(res)) return;
      }
      await write(res, frames[i]!);
    }
    if (gone(res)) return;
    if (p.hang) return; // stall: never end, until the client aborts or close() destroys the socket
    if (p.closeAfterBytes !== undefined) {
      const socket = res.socket;
      await drained(socket);
      socket?.destroy();
      return;
    }
    res.end();
  }

  const server = createServer((req, res) => {
    // Take the response at arrival time so concurrent requests keep FIFO order.
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const prepared = queue.shift() ?? fallback ?? noResponseQueued(method, url);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: any;
      try {
        body = rawBody ? JSON.parse(rawBody) : undefined;
      } catch {
        body = undefined;
      }
      requests.push({ method, path: url.split('?')[0]!, url, headers: req.headers, rawBody, body });
      respond(req, res, prepared).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`fixture server error: ${String(err)}`);
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    openaiBaseURL: `${url}/v1`,
    anthropicBaseURL: url,
    port,
    requests,
    enqueue(...responses) {
      for (const r of responses) queue.push(prepare(r, fixturesDir));
    },
    setDefault(response) {
      fallback = response === undefined ? undefined : prepare(response, fixturesDir);
    },
    get pending() {
      return queue.length;
    },
    async close() {
      if (closing) return;
      closing = true;
      for (const wake of [...wakers]) wake();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
