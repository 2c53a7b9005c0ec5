/**
 * The HTTP face of the turn API (DESIGN "Serving"), on Fastify: its body limit answers 413 before a
 * large body is read, its JSON-schema validation (ajv) checks every body, query and parameter, and
 * its error handler gives every failure one JSON shape. Everything under `/v1` needs
 * `Authorization: Bearer <token>`; `GET /v1/health` does not.
 *
 * Errors: `{ "error": { "code", "message" } }` with a stable code — 400 `INVALID_REQUEST` (and
 * `INVALID_SESSION_ID`, `EMPTY_PROMPT`, `UNKNOWN_PROVIDER`, `UNKNOWN_POLICY`, `WORKSPACE_NOT_FOUND`, `SEQ_OUT_OF_RANGE`,
 * `INVALID_LAST_EVENT_ID`), 401 `UNAUTHORIZED`, 404 `SESSION_NOT_FOUND` / `APPROVAL_NOT_FOUND` /
 * `NOT_FOUND`, 409 `SESSION_BUSY` / `JOURNAL_LOCKED` / `JOURNAL_EXISTS` / `APPROVAL_ALREADY_DECIDED` /
 * `NO_RUNNING_TURN` / `IDEMPOTENCY_KEY_REUSED`, 413 `BODY_TOO_LARGE`, 415 `UNSUPPORTED_MEDIA_TYPE`, 500 `INTERNAL` (no detail
 * is echoed). Request bodies, headers and the token are never put in a message.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Ajv } from 'ajv';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { closestName, HarnessError, type AnySessionEvent } from '../../runtime/index.ts';
import type { TurnQueue } from './queue.ts';
import { addViewerRoutes, isViewerUrl } from './viewer.ts';
import type { TurnService } from './turns.ts';

export interface HttpOptions {
  /** The bearer token clients must send. */
  readonly token: string;
  /** Largest accepted request body, bytes (413 beyond). */
  readonly maxBodyBytes: number;
  /** A comment line on idle event streams this often, ms (keeps proxies from closing them). */
  readonly heartbeatMs?: number;
  /** When set, a submitted turn is a job for any worker of the queue (202 `{ job }`), not run here. */
  readonly queue?: TurnQueue;
  /**
   * A live event stream whose client reads slower than the session is written is closed past this
   * many queued events (it reconnects with Last-Event-ID). Default 50 000. Catching up from
   * further behind never counts against it: the store is read as fast as the client takes it.
   */
  readonly maxQueuedEvents?: number;
  /**
   * An event stream whose socket has taken nothing for this long, ms, while bytes wait for it, is
   * closed (a stuck client; a slow one drains now and then). Default 60 000.
   */
  readonly streamStallTimeoutMs?: number;
  /**
   * Only reads (`harness view`): every request but GET and HEAD answers 403 `READ_ONLY`, so no turn,
   * abort or approval can be made through this server.
   */
  readonly readOnly?: boolean;
  /** The built viewer served at `/viewer/` (default the package's `dist/viewer`, see viewer.ts). */
  readonly viewerDir?: string;
}

const STATUS: Readonly<Record<string, number>> = {
  INVALID_REQUEST: 400,
  INVALID_SESSION_ID: 400,
  EMPTY_PROMPT: 400,
  UNKNOWN_PROVIDER: 400,
  UNKNOWN_POLICY: 400,
  WORKSPACE_NOT_FOUND: 400,
  SEQ_OUT_OF_RANGE: 400,
  INVALID_LAST_EVENT_ID: 400,
  UNAUTHORIZED: 401,
  READ_ONLY: 403,
  NOT_FOUND: 404,
  SESSION_NOT_FOUND: 404,
  APPROVAL_NOT_FOUND: 404,
  SESSION_BUSY: 409,
  JOURNAL_LOCKED: 409,
  JOURNAL_EXISTS: 409,
  APPROVAL_ALREADY_DECIDED: 409,
  NO_RUNNING_TURN: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  BODY_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  SERVER_CLOSED: 503,
};

/** Fastify's own error codes, in ours. */
const FASTIFY_CODES: Readonly<Record<string, string>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'INVALID_REQUEST',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'INVALID_REQUEST',
  FST_ERR_VALIDATION: 'INVALID_REQUEST',
};

/**
 * A validation error for a key the schema does not name, said with the key and, when one is close,
 * the key meant: `body has an unknown key "promt" (did you mean "prompt"?)`. Undefined for any other error.
 */
function unknownKeyMessage(error: FastifyError, schema: unknown): string | undefined {
  const first = error.validation?.[0] as { keyword?: string; instancePath?: string; params?: { additionalProperty?: unknown } } | undefined;
  const key = first?.params?.additionalProperty;
  if (first?.keyword !== 'additionalProperties' || typeof key !== 'string') return undefined;
  const context = (error as { validationContext?: string }).validationContext ?? 'body';
  // The object the key was found in: the schema of the request part, walked down the instance path.
  let node = (schema as Record<string, unknown> | undefined)?.[context] as { properties?: Record<string, unknown> } | undefined;
  const path = (first.instancePath ?? '').split('/').filter(Boolean);
  for (const segment of path) node = node?.properties?.[segment] as typeof node;
  const names = Object.keys(node?.properties ?? {});
  const meant = closestName(key, names);
  const where = [context, ...path].join('.');
  return `${where} has an unknown key ${JSON.stringify(key)}${meant ? ` (did you mean ${JSON.stringify(meant)}?)` : names.length > 0 ? ` (it takes ${names.map((n) => JSON.stringify(n)).join(', ')})` : ''}`;
}

/** `{ error: { code, message } }`, and the HTTP status of a code. */
export function errorBody(code: string, message: string): { error: { code: string; message: string } } {
  return { error: { code, message } };
}
export const statusOf = (code: string): number => STATUS[code] ?? 500;

/** The page that documents the API (it ships in the package). */
const API_DOC = 'cookbook/serve.md';

const sessionParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 200 } } } as const;
const seq = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER } as const;
const name = { type: 'string', minLength: 1, maxLength: 200 } as const;

/** Builds the Fastify app over `turns` (not listening yet). */
export function buildApp(turns: TurnService, options: HttpOptions): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: options.maxBodyBytes, forceCloseConnections: true });
  // The request parts' validators (ajv, as Fastify's own but for coercion): what a schema does not
  // name is refused, not dropped silently. A query string or a path parameter is text, so `?after=5`
  // is coerced to the number its schema says; a JSON body is not: `{"prompt": 5}` (or true, null) is
  // refused like `["a"]`, not journaled as the text "5". Per app: ajv caches what it compiled.
  const ajvOptions = { useDefaults: true, removeAdditional: false, addUsedSchema: false, allErrors: false } as const;
  const coercing = new Ajv({ ...ajvOptions, coerceTypes: true });
  const strict = new Ajv({ ...ajvOptions, coerceTypes: false });
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema));
  // The API's routes as registered (GET /v1 lists them): every route added below, and by whoever adds more.
  const routes: string[] = [];
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1')) return;
    for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push(`${method} ${route.url}`);
  });
  const expected = digest(options.token);
  /** Open event streams: aborting one ends it after what is queued; `done` settles once its response ended. */
  const streams = new Map<AbortController, Promise<void>>();

  app.addHook('onRequest', async (request, reply) => {
    if (request.url === '/v1/health' || isViewerUrl(request.url)) return;
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (match === null || !timingSafeEqual(digest(match[1]!), expected)) {
      reply.header('www-authenticate', 'Bearer');
      return reply
        .code(401)
        .send(
          errorBody(
            'UNAUTHORIZED',
            match === null
              ? `This server needs "Authorization: Bearer <token>" (${options.readOnly ? 'the token in the #fragment of the URL harness view printed' : 'the token harness serve printed, or $HARNESS_SERVE_TOKEN'}).`
              : "The bearer token is not this server's.",
          ),
        );
    }
  });

  if (options.readOnly) {
    app.addHook('onRequest', async (request) => {
      if (request.method !== 'GET' && request.method !== 'HEAD')
        throw new HarnessError('READ_ONLY', 'This server only reads sessions (harness view); run turns, aborts and approvals through harness serve.');
    });
  }

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const mapped = error.code ? FASTIFY_CODES[error.code] : undefined;
    if (mapped !== undefined) {
      const message =
        mapped === 'BODY_TOO_LARGE'
          ? `The request body is larger than this server accepts (${options.maxBodyBytes} bytes).`
          : error.validation
            ? `Invalid request: ${unknownKeyMessage(error, request.routeOptions.schema) ?? error.message}.`
            : error.message;
      return reply.code(statusOf(mapped)).send(errorBody(mapped, message));
    }
    if (HarnessError.is(error)) return reply.code(statusOf(error.code)).send(errorBody(error.code, error.message));
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.code(error.statusCode).send(errorBody('INVALID_REQUEST', error.message));
    }
    turns.harness.kernel.bus.report({
      level: 'error',
      code: 'SERVE_INTERNAL',
      message: `${request.method} ${request.routeOptions.url ?? '?'}: ${error instanceof Error ? error.message : String(error)}`,
      source: 'serve',
    });
    return reply.code(500).send(errorBody('INTERNAL', 'The server failed to answer this request; its log says why.'));
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}; GET /v1 lists the routes of the API, and ${API_DOC} documents them.`)),
  );

  // The API's index: what a client that found the server asks first (`curl …/v1`).
  const index = async () => ({ api: 'v1', docs: `${API_DOC} (in the harness-runtime package and its repository)`, readOnly: options.readOnly === true, routes });
  app.get('/v1', index);
  app.get('/v1/', index);

  app.get('/v1/health', async () => ({ ok: true, readOnly: options.readOnly === true }));

  app.get('/v1/sessions', async () => {
    const summaries = await turns.listSessions();
    // Running on any worker of the store, not only here.
    const runningTurns = await turns.runningTurns(summaries);
    return {
      sessions: summaries.map(({ path: _path, openTurn: _openTurn, ...summary }) => {
        const running = runningTurns.get(summary.id);
        const cost = summary.error === undefined ? turns.costOfSummary(summary) : undefined;
        return { ...summary, ...(running === undefined ? {} : { runningTurn: running }), ...(cost && cost.pricedCallCount > 0 ? { costUsd: cost.costUsd } : {}) };
      }),
    };
  });

  addViewerRoutes(app, options.viewerDir);

  app.post<{ Body: { id?: string; cwd?: string; title?: string } | undefined }>(
    '/v1/sessions',
    {
      schema: {
        body: { type: ['object', 'null'], additionalProperties: false, properties: { id: name, cwd: { type: 'string', minLength: 1, maxLength: 4096 }, title: { type: 'string', maxLength: 500 } } },
      },
    },
    async (request, reply) => reply.code(201).send({ session: await turns.createSession(request.body ?? {}) }),
  );

  app.get<{ Params: { id: string } }>('/v1/sessions/:id', { schema: { params: sessionParams } }, async (request) => {
    const session = await turns.getSession(request.params.id);
    const cost = await turns.costOf(request.params.id);
    return { session: cost && cost.pricedCallCount > 0 ? { ...session, costUsd: cost.costUsd, turnCostUsd: cost.turnCostUsd } : session };
  });

  app.get<{ Params: { id: string }; Querystring: { after?: number; to?: number; limit?: number } }>(
    '/v1/sessions/:id/events',
    { schema: { params: sessionParams, querystring: { type: 'object', additionalProperties: false, properties: { after: seq, to: seq, limit: { type: 'integer', minimum: 1, maximum: 10_000 } } } } },
    async (request) => {
      const { after, to, limit } = request.query;
      return turns.readEvents(request.params.id, { ...(after === undefined ? {} : { after }), ...(to === undefined ? {} : { to }), ...(limit === undefined ? {} : { limit }) });
    },
  );

  app.get<{ Params: { id: string }; Querystring: { at?: number } }>(
    '/v1/sessions/:id/state',
    { schema: { params: sessionParams, querystring: { type: 'object', additionalProperties: false, properties: { at: seq } } } },
    async (request) => turns.stateAt(request.params.id, request.query.at),
  );

  app.post<{ Params: { id: string }; Body: { prompt: string; provider?: string; model?: string; reasoningEffort?: string; approve?: string } }>(
    '/v1/sessions/:id/turns',
    {
      schema: {
        params: sessionParams,
        body: {
          type: 'object',
          required: ['prompt'],
          additionalProperties: false,
          properties: { prompt: { type: 'string' }, provider: name, model: name, reasoningEffort: { type: 'string', minLength: 1, maxLength: 40 }, approve: name },
        },
      },
    },
    async (request, reply) => {
      // The caller's W3C trace context parents the turn's spans (the runtime checks it; a malformed one is ignored).
      const { traceparent, tracestate } = request.headers;
      const input = typeof traceparent === 'string' ? { ...request.body, trace: { traceparent, ...(typeof tracestate === 'string' ? { tracestate } : {}) } } : request.body;
      const idempotencyKey = idempotencyKeyOf(request.headers['idempotency-key']);
      const keyed = idempotencyKey === undefined ? {} : { idempotencyKey };
      return options.queue
        ? reply.code(202).send({ job: await options.queue.submit(request.params.id, input, keyed) })
        : reply.code(202).send({ turn: await turns.submitTurn(request.params.id, input, keyed) });
    },
  );

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/abort', { schema: { params: sessionParams } }, async (request, reply) => reply.code(202).send(await turns.abortTurn(request.params.id)));

  app.get<{ Params: { id: string } }>('/v1/sessions/:id/approvals', { schema: { params: sessionParams } }, async (request) => ({ approvals: await turns.pendingApprovals(request.params.id) }));

  app.post<{ Params: { id: string; callId: string }; Body: { decision: 'allow' | 'deny'; reason?: string } }>(
    '/v1/sessions/:id/approvals/:callId',
    {
      schema: {
        params: { type: 'object', required: ['id', 'callId'], properties: { id: name, callId: name } },
        body: { type: 'object', required: ['decision'], additionalProperties: false, properties: { decision: { enum: ['allow', 'deny'] }, reason: { type: 'string', maxLength: 500 } } },
      },
    },
    async (request) => {
      const { decision, reason } = request.body;
      const pending = await turns.answerApproval(request.params.id, request.params.callId, { decision, ...(reason ? { reason } : {}) });
      return { approval: { ...pending, decision } };
    },
  );

  app.get<{ Params: { id: string }; Querystring: { after?: number } }>(
    '/v1/sessions/:id/stream',
    { schema: { params: sessionParams, querystring: { type: 'object', additionalProperties: false, properties: { after: seq } } } },
    (request, reply) => streamEvents(turns, request, reply, options, streams),
  );

  // Before connections are closed: end every event stream cleanly (what is queued, then the end of
  // the response), so a client sees a finished stream and reconnects, not a broken socket.
  app.addHook('preClose', async () => {
    const done = [...streams.values()];
    for (const controller of streams.keys()) controller.abort();
    await Promise.all(done);
  });
  return app;
}

/** Serialised SSE frames, shared by every subscriber of a session (events are frozen, so this is safe). */
const frames = new WeakMap<AnySessionEvent, string>();
const frameOf = (event: AnySessionEvent): string => {
  let frame = frames.get(event);
  if (frame === undefined) {
    frame = `id: ${event.seq}\ndata: ${JSON.stringify(event)}\n\n`;
    frames.set(event, frame);
  }
  return frame;
};

/**
 * `text/event-stream`: every event after `Last-Event-ID` (else `?after=`, else 0) as `id: <seq>` +
 * `data: <event JSON>`, then each new one live. A reconnect with the last id it saw misses nothing
 * and repeats nothing.
 */
async function streamEvents(
  turns: TurnService,
  request: FastifyRequest<{ Params: { id: string }; Querystring: { after?: number } }>,
  reply: FastifyReply,
  options: HttpOptions,
  streams: Map<AbortController, Promise<void>>,
): Promise<void> {
  const lastEventId = request.headers['last-event-id'];
  let after = request.query.after ?? 0;
  if (lastEventId !== undefined) {
    const text = Array.isArray(lastEventId) ? lastEventId[0]! : lastEventId;
    if (!/^\d{1,15}$/.test(text.trim())) throw new HarnessError('INVALID_LAST_EVENT_ID', 'Last-Event-ID must be the seq of an event (decimal digits).');
    after = Number(text.trim());
  }
  await turns.requireSession(request.params.id); // SESSION_NOT_FOUND before any byte is sent
  const controller = new AbortController();
  // A live client this far behind is disconnected (it reconnects with Last-Event-ID): its queue closes.
  const events = turns.events(request.params.id, { after, signal: controller.signal, maxQueued: options.maxQueuedEvents ?? 50_000 });
  let ended!: () => void;
  streams.set(controller, new Promise<void>((resolve) => (ended = resolve)));
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.write('retry: 1000\n\n');
  const heartbeat = setInterval(() => res.write(': ping\n\n'), options.heartbeatMs ?? 15_000);
  heartbeat.unref();
  const stop = (): void => controller.abort();
  request.raw.on('close', stop);
  res.on('close', stop);
  res.once('close', () => ended()); // a socket gone before the end: nothing more to wait for
  try {
    for await (const event of events) {
      // What queued meanwhile goes out in the same write (a burst of chunks is one syscall).
      let text = frameOf(event);
      if (events.queued > 0) for (const more of events.drain()) text += frameOf(more);
      if (!res.write(text)) {
        // Waits for the socket, or for the queue to close (the server closes, or the client fell
        // too far behind), or for the stall timeout (a client that takes nothing: cut off).
        const stalled = await new Promise<boolean>((resolve) => {
          const done = (): void => settle(false);
          const timer = setTimeout(() => settle(true), options.streamStallTimeoutMs ?? 60_000);
          const settle = (timedOut: boolean): void => {
            clearTimeout(timer);
            res.off('drain', done);
            controller.signal.removeEventListener('abort', done);
            events.closed.removeEventListener('abort', done);
            resolve(timedOut);
          };
          res.on('drain', done);
          controller.signal.addEventListener('abort', done, { once: true });
          events.closed.addEventListener('abort', done, { once: true });
        });
        if (stalled) {
          // What it has not taken cannot be flushed: drop the connection (a reconnect resumes).
          res.destroy();
          break;
        }
        if (controller.signal.aborted || events.overflowed) break;
      }
    }
  } finally {
    clearInterval(heartbeat);
    events.return();
    if (!res.writableEnded) res.end(ended);
    else ended();
    streams.delete(controller);
  }
}

/**
 * The `Idempotency-Key` of a turn's submit (IETF draft-ietf-httpapi-idempotency-key-header): 1 to
 * 200 visible ASCII characters. The same key again starts nothing new: it answers the turn (or the
 * queued job) the first submit started, with `replayed: true`; with a different request it is 409
 * `IDEMPOTENCY_KEY_REUSED`.
 * @throws HarnessError `INVALID_REQUEST` for a key that is not one.
 */
function idempotencyKeyOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const key = (Array.isArray(header) ? header[0]! : header).trim();
  if (!/^[\x21-\x7e]{1,200}$/.test(key)) throw new HarnessError('INVALID_REQUEST', 'Idempotency-Key must be 1 to 200 visible ASCII characters (a UUID is a good key).');
  return key;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
