/**
 * plugins/serve — `harness serve`: sessions over HTTP and Server-Sent Events (seed 000 "Human 边界":
 * the server connects HTTP requests and an SSE channel to `session.run`; DESIGN "Serving").
 *
 * The plugin provides the `serve` service: `ctx.serve.start(harness, overrides?)` starts an HTTP
 * server (Fastify) over a {@link TurnService} and returns its address and token; unloading the plugin
 * closes every server it started. Embedders that want no HTTP use {@link TurnService} directly:
 *
 * ```ts
 * import { TurnService } from 'harness-runtime/plugins/serve';
 * const turns = new TurnService(harness, { approvalPolicy: 'always-ask' });
 * const { id } = await turns.createSession({ cwd });
 * const { startSeq } = await turns.submitTurn(id, { prompt: 'What is here?' });
 * for await (const event of turns.events(id, { after: startSeq - 1 })) { … if (event.type === 'turn/end') break; }
 * ```
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { definePlugin, HarnessError, isFileStoreSpec, redactStoreUrl, storeScheme, z, type Harness, type JournalStore } from '../../runtime/index.ts';
import { buildApp } from './http.ts';
import { TurnQueue, type TurnQueueOptions } from './queue.ts';
import { checkServable, TurnService } from './turns.ts';

export { TurnService, checkServable, type TurnServiceOptions, type TurnInput, type SubmittedTurn, type SessionInfo, type SessionCost, type RunningTurn } from './turns.ts';
export { ApprovalDesk, type PendingApproval, type ApprovalReply } from './approvals.ts';
export { EventQueue } from './tail.ts';
export { TurnQueue, TURN_QUEUE, type TurnQueueOptions, type QueuedTurn } from './queue.ts';
export { buildApp, errorBody, statusOf, type HttpOptions } from './http.ts';
export { addViewerRoutes, defaultViewerDir, VIEWER_CSP, VIEWER_DIR_ENV } from './viewer.ts';

/** The environment variable a server's bearer token is read from (else one is generated). */
export const TOKEN_ENV = 'HARNESS_SERVE_TOKEN';

export const serveConfigSchema = z
  .strictObject({
    /** Interface to bind. Anything but loopback exposes the sessions (and their tools) to the network. */
    host: z.string().min(1).default('127.0.0.1'),
    /** TCP port; 0 picks a free one. */
    port: z.number().int().min(0).max(65_535).default(7860),
    /** Largest request body, bytes (413 beyond). */
    maxBodyBytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    /** An approval nobody answers is denied after this long, ms. */
    approvalTimeoutMs: z.number().int().min(1).default(300_000),
    /** The approval policy of a turn that names none (default: the approvals plugin's default). */
    approvalPolicy: z.string().min(1).optional(),
    /**
     * Deprecated, and only checked: sessions live in the harness's store (its config's `store`, or
     * `harness --store`). A value here must name that same store.
     */
    store: z.string().min(1).optional(),
    /**
     * A `postgres://` URL: submitted turns become jobs in a queue in that database, run by any worker
     * sharing it (see queue.ts). Without it, a turn runs in the server that took it.
     */
    queue: z.string().min(1).optional(),
    /** With `queue`: jobs this worker runs at once. */
    queueConcurrency: z.number().int().min(1).max(64).default(4),
    /** With `queue`: a job not completed this long after it was taken is taken again, s. */
    queueExpireSeconds: z.number().int().min(1).default(600),
    /** An event stream whose client has taken no bytes for this long (while some wait for it) is closed, ms. */
    streamStallTimeoutMs: z.number().int().min(100).default(60_000),
  })
  .default({ host: '127.0.0.1', port: 7860, maxBodyBytes: 1024 * 1024, approvalTimeoutMs: 300_000, queueConcurrency: 4, queueExpireSeconds: 600, streamStallTimeoutMs: 60_000 });

export type ServeSettings = z.infer<typeof serveConfigSchema>;

/** Overrides for one server (the CLI's flags). */
export interface StartOptions extends Partial<ServeSettings> {
  /** The bearer token (default `$HARNESS_SERVE_TOKEN`, else a generated one). */
  readonly token?: string;
  /** The workspace of sessions created without one (default the process's cwd). */
  readonly cwd?: string;
  /** With `queue`: finer timings (tests). */
  readonly queueTuning?: Pick<TurnQueueOptions, 'retryDelaySeconds' | 'pollingIntervalSeconds' | 'maintenanceIntervalSeconds'>;
  /** Only reads: no turn, abort or approval (`harness view`; see {@link HttpOptions.readOnly}). */
  readonly readOnly?: boolean;
  /** The built viewer to serve at `/viewer/` (default the package's `dist/viewer`). */
  readonly viewerDir?: string;
}

/** A listening server. */
export interface RunningServer {
  /** `http://host:port` */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly token: string;
  /** Whether the token was generated (so the caller prints it) rather than given. */
  readonly tokenGenerated: boolean;
  readonly turns: TurnService;
  /** The turn queue, when the server is a worker of one (`queue`). */
  readonly queue?: TurnQueue;
  /** Aborts running turns (journaled as aborted), ends event streams, stops listening. Idempotent. */
  close(): Promise<void>;
}

export interface ServeService {
  readonly settings: ServeSettings;
  /**
   * Starts a server over `harness`.
   * @throws HarnessError `STORE_UNSUPPORTED` for a store this build cannot open; the listen error
   *   (`EADDRINUSE`, …) otherwise.
   */
  start(harness: Harness, options?: StartOptions): Promise<RunningServer>;
}

declare global {
  namespace Harness {
    interface Services {
      serve?: ServeService;
    }
  }
}

/** Starts a server over `harness` with `settings` (what the service does; usable without the plugin). */
export async function startServer(harness: Harness, settings: ServeSettings, options: StartOptions = {}): Promise<RunningServer> {
  const merged: ServeSettings = serveConfigSchema.parse({
    ...settings,
    ...definedOnly(options, ['host', 'port', 'maxBodyBytes', 'approvalTimeoutMs', 'approvalPolicy', 'store', 'queue', 'queueConcurrency', 'queueExpireSeconds', 'streamStallTimeoutMs']),
  });
  checkServable(harness.store);
  if (merged.store !== undefined) checkStoreSetting(merged.store, harness.store);
  const given = checkToken(options.token);
  const token = given ?? randomBytes(24).toString('base64url');
  const turns = new TurnService(harness, {
    approvalTimeoutMs: merged.approvalTimeoutMs,
    ...(merged.approvalPolicy ? { approvalPolicy: merged.approvalPolicy } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  let queue: TurnQueue | undefined;
  let app: ReturnType<typeof buildApp> | undefined;
  try {
    if (merged.queue !== undefined) {
      queue = await TurnQueue.open(turns, { url: merged.queue, concurrency: merged.queueConcurrency, expireInSeconds: merged.queueExpireSeconds, ...queueTuning(options) });
      await queue.work();
    }
    app = buildApp(turns, {
      token,
      maxBodyBytes: merged.maxBodyBytes,
      streamStallTimeoutMs: merged.streamStallTimeoutMs,
      ...(queue ? { queue } : {}),
      ...(options.readOnly ? { readOnly: true } : {}),
      ...(options.viewerDir ? { viewerDir: options.viewerDir } : {}),
    });
    await app.listen({ host: merged.host, port: merged.port });
  } catch (error) {
    await queue?.stop().catch(() => undefined);
    await turns.close();
    await app?.close().catch(() => undefined);
    throw error;
  }
  const listening = app;
  const address = listening.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    host: address.address,
    port: address.port,
    token,
    tokenGenerated: given === undefined,
    turns,
    ...(queue ? { queue } : {}),
    close: () =>
      (closing ??= (async () => {
        await queue?.stop().catch(() => undefined);
        await turns.close();
        await listening.close();
      })()),
  };
}

/** The shortest bearer token a server takes, characters. */
export const MIN_TOKEN_LENGTH = 16;

/**
 * The token given (`token`, else `$HARNESS_SERVE_TOKEN`), or undefined (one is generated).
 * @throws HarnessError `INVALID_SERVE_TOKEN` for one shorter than {@link MIN_TOKEN_LENGTH} characters,
 *   naming where it came from (the variable or the option) and the rule; the token is never echoed.
 */
export function checkToken(token?: string): string | undefined {
  const fromEnv = token === undefined;
  const value = fromEnv ? process.env[TOKEN_ENV] : token;
  if (value === undefined || value === '') return undefined;
  if (value.length < MIN_TOKEN_LENGTH) {
    const rule = `a serve token must be at least ${MIN_TOKEN_LENGTH}`;
    throw new HarnessError(
      'INVALID_SERVE_TOKEN',
      fromEnv
        ? `$${TOKEN_ENV} is ${value.length} characters; ${rule}. Set it to a longer secret (openssl rand -hex 24), or unset it to have one generated and printed.`
        : `The token option is ${value.length} characters; ${rule}. Pass a longer secret, or none to have one generated.`,
      { details: { source: fromEnv ? TOKEN_ENV : 'token', length: value.length, minLength: MIN_TOKEN_LENGTH } },
    );
  }
  return value;
}

/**
 * The serve plugin's deprecated `store` setting must name the harness's own store: its kind
 * (`file` for any `file`/`file:` spec; else the URL's scheme, `postgres` and `postgresql` alike).
 * @throws HarnessError `STORE_UNSUPPORTED` naming both (credentials in a URL are never echoed).
 */
export function checkStoreSetting(setting: string, store: JournalStore): void {
  const kind = isFileStoreSpec(setting) ? 'file' : storeScheme(setting)?.replace(/^postgresql$/, 'postgres');
  if (kind === store.kind) return;
  throw new HarnessError(
    'STORE_UNSUPPORTED',
    `The serve plugin's store ${JSON.stringify(isFileStoreSpec(setting) ? setting : redactStoreUrl(setting))} is not the harness's store (${store.kind}: ${store.location}). Sessions are served from the harness's store: set it with the config's store key or harness --store, and leave the serve plugin's store out.`,
    { details: { setting: isFileStoreSpec(setting) ? setting : redactStoreUrl(setting), kind: store.kind } },
  );
}

function queueTuning(options: StartOptions): Partial<TurnQueueOptions> {
  return options.queueTuning ?? {};
}

function definedOnly<T extends object>(value: T, keys: readonly (keyof T)[]): Partial<T> {
  const out: Partial<T> = {};
  for (const key of keys) if (value[key] !== undefined) out[key] = value[key];
  return out;
}

export default definePlugin({
  name: 'serve',
  config: serveConfigSchema,
  setup(ctx, settings) {
    const servers = new Set<RunningServer>();
    ctx.provide('serve', {
      settings,
      async start(harness, options) {
        const server = await startServer(harness, settings, options);
        servers.add(server);
        return server;
      },
    });
    ctx.onDispose(async () => {
      for (const server of servers) await server.close();
    });
  },
});
