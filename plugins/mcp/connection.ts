/**
 * One MCP server, kept connected: the official SDK's `Client` over `StdioClientTransport` or
 * `StreamableHTTPClientTransport`, its tool list (paged `tools/list`, refreshed on
 * `notifications/tools/list_changed`), and calls that never wedge a turn.
 *
 * Lifecycle (`state`): `connecting` → `ready`; a lost connection (the process exited, the transport
 * closed, or a health check failed) → `backoff` → `connecting` again after a delay that doubles per
 * failed attempt (`restart.initialDelayMs` … `restart.maxDelayMs`); `closed` once disposed.
 * A call that fails or times out is followed by a health check (`ping`, `restart.pingTimeoutMs`):
 * a server that does not answer counts as hung, is killed and restarted. A call made while the
 * server is down waits for its next start attempt (at most `connectTimeoutMs`); if that fails, or
 * takes longer, the call fails with `MCP_SERVER_UNAVAILABLE`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type CallToolResult, type Progress, type Tool, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { HarnessError } from '../../runtime/index.ts';
import type { McpServerConfig, RestartConfig } from './config.ts';

export type ConnectionState = 'connecting' | 'ready' | 'backoff' | 'closed';

/** What a connection tells its subscribers. */
export type ConnectionEvent =
  | { readonly kind: 'tools'; readonly tools: readonly Tool[] }
  /** `attempt` 1: it was serving and went away; 2, 3, …: a restart failed too. */
  | { readonly kind: 'lost'; readonly message: string; readonly restartInMs: number; readonly attempt: number }
  | { readonly kind: 'ready'; readonly restartCount: number; readonly toolCount: number };

/** Longest delay `setTimeout` honours: the SDK's own request timeout is off, the close-out's signal decides. */
const NO_TIMEOUT_MS = 2 ** 31 - 1;
const STDERR_TAIL_CHARS = 2_000;

const CLIENT_INFO = { name: 'harness-runtime', version: '1' };

export class McpConnection {
  readonly config: McpServerConfig;
  private readonly restart: RestartConfig;
  private stateValue: ConnectionState = 'connecting';
  private client: Client | undefined;
  private transport: Transport | undefined;
  private toolList: readonly Tool[] = [];
  private listed = false;
  /** The client whose `tools/list` succeeded last (a start counts only once its tools are listed). */
  private listedBy: Client | undefined;
  private readonly subscribers = new Set<(event: ConnectionEvent) => void>();
  private waiters: { resolve: () => void }[] = [];
  private refresh: Promise<void> | null = null;
  private refreshAgain = false;
  private healthCheck: Promise<void> | null = null;
  private attempt = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private lastError = '';
  private stderrTail = '';
  /** Restarts after a lost connection (not counting the first start). */
  restartCount = 0;

  constructor(config: McpServerConfig, restart: RestartConfig) {
    this.config = config;
    this.restart = restart;
  }

  get name(): string {
    return this.config.name;
  }
  get state(): ConnectionState {
    return this.stateValue;
  }
  /** The server's tools as last listed (empty until the first listing). */
  get tools(): readonly Tool[] {
    return this.toolList;
  }
  /** Why the last start attempt or connection failed ('' when none did). */
  get lastFailure(): string {
    return this.lastError;
  }
  /** The process id of a stdio server while it runs. */
  get pid(): number | null {
    return this.transport instanceof StdioClientTransport ? this.transport.pid : null;
  }

  /** Starts connecting (once). */
  start(): void {
    if (this.client === undefined && this.restartTimer === undefined && this.stateValue === 'connecting') void this.connect();
  }

  subscribe(listener: (event: ConnectionEvent) => void): () => void {
    this.subscribers.add(listener);
    return () => this.subscribers.delete(listener);
  }

  /**
   * Resolves true once the tools were listed; false when a start attempt failed first (the reason is in
   * the `lost` event), after `timeoutMs`, or on close.
   */
  async whenListed(timeoutMs: number): Promise<boolean> {
    if (this.listed) return true;
    await this.waitReady(timeoutMs);
    return this.listed;
  }

  /**
   * Calls a tool. Resolves with the server's result (its `isError` included); `onProgress` hears the
   * server's `notifications/progress` for the call.
   * @throws HarnessError `MCP_SERVER_UNAVAILABLE` (not up within `connectTimeoutMs`), `MCP_SERVER_LOST`
   * (the connection broke during the call; a restart follows), `MCP_CALL_FAILED` (the server answered
   * with a JSON-RPC error); the abort reason when `signal` fired.
   */
  async callTool(name: string, args: Record<string, unknown>, signal: AbortSignal, onProgress?: (progress: Progress) => void): Promise<CallToolResult> {
    const client = await this.readyClient(signal);
    // The SDK never unhooks its abort listener: an abort after the answer would send a stray
    // `notifications/cancelled`. So the SDK gets a signal of its own, linked only while the call runs.
    const pending = new AbortController();
    const forward = () => pending.abort(signal.reason);
    signal.addEventListener('abort', forward, { once: true });
    let result: CallToolResult;
    try {
      result = (await client.callTool({ name, arguments: args }, undefined, {
        signal: pending.signal,
        timeout: NO_TIMEOUT_MS,
        // With a handler the SDK sends a progressToken, so the server may report progress.
        ...(onProgress ? { onprogress: onProgress } : {}),
      })) as CallToolResult;
    } catch (error) {
      // An abort or timeout is answered now; the ping after it decides whether the server hung.
      if (signal.aborted) {
        void this.checkHealth(client);
        throw signal.reason;
      }
      // Was it the call, or the server? A server that still answers a ping refused the call; one that
      // does not (or whose connection closed) is restarted, and the call says so.
      await this.checkHealth(client);
      if (this.client !== client) {
        throw new HarnessError('MCP_SERVER_LOST', `MCP server "${this.name}" went away during the call (${messageOf(error)})${this.stderrNote()}; it is being restarted — call again.`);
      }
      throw new HarnessError('MCP_CALL_FAILED', `MCP server "${this.name}" refused the call of ${name}: ${messageOf(error)}`);
    } finally {
      signal.removeEventListener('abort', forward);
    }
    // A list change the call caused (announced before its answer) is offered to the model's next request.
    if (this.refresh !== null) await this.refresh;
    return result;
  }

  /** Kills the server process (a stdio one) and closes the client: for tests and for a hung server. */
  async kill(reason: string): Promise<void> {
    const client = this.client;
    if (client === undefined) return;
    const pid = this.pid;
    if (pid !== null) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    this.lost(client, reason);
    await client.close().catch(() => undefined);
  }

  /** Closes the connection for good (the server process is stopped). */
  async close(): Promise<void> {
    if (this.stateValue === 'closed') return;
    this.stateValue = 'closed';
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const client = this.client;
    this.client = undefined;
    this.transport = undefined;
    this.wakeWaiters();
    this.subscribers.clear();
    await client?.close().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.stateValue === 'closed') return;
    this.stateValue = 'connecting';
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const transport = this.createTransport();
    this.client = client;
    this.transport = transport;
    client.onerror = (error) => {
      // E.g. an HTTP response stream cut off: the SDK would wait for its answer for ever, so ask
      // whether the server is still there (a dead one is closed, which fails the calls waiting on it).
      this.lastError = messageOf(error);
      if (this.stateValue === 'ready') void this.checkHealth(client);
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      if (this.client === client) await this.refreshTools(client);
    });
    try {
      await client.connect(transport, { timeout: this.config.connectTimeoutMs });
      // Watched from here on: a failed start closes the client too, and is told below with its cause.
      client.onclose = () => this.lost(client, `the connection closed${this.stderrNote()}`);
      await this.refreshTools(client);
      if (this.listedBy !== client) throw new Error(`tools/list failed: ${this.lastError}`);
    } catch (error) {
      if (this.client === client) {
        this.lastError = messageOf(error);
        this.lost(client, `it did not start: ${this.lastError}${this.stderrNote()}`);
        await client.close().catch(() => undefined);
      }
      return;
    }
    if (this.client !== client) return;
    this.stateValue = 'ready';
    this.attempt = 0;
    this.emit({ kind: 'ready', restartCount: this.restartCount, toolCount: this.toolList.length });
    this.wakeWaiters();
  }

  private createTransport(): Transport {
    const config = this.config;
    if (config.transport === 'http') {
      return new StreamableHTTPClientTransport(new URL(config.url), { ...(config.headers ? { requestInit: { headers: config.headers } } : {}) });
    }
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      ...(config.env ? { env: config.env } : {}),
      ...(config.cwd ? { cwd: config.cwd } : {}),
      stderr: 'pipe',
    });
    // Kept (the last lines) to say why a server died; read so a chatty server never blocks on a full pipe.
    this.stderrTail = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    });
    return transport;
  }

  /** Lists every page of tools; coalesces notifications that arrive while a listing runs. */
  private refreshTools(client: Client): Promise<void> {
    if (this.refresh !== null) {
      this.refreshAgain = true;
      return this.refresh;
    }
    const run = async () => {
      do {
        this.refreshAgain = false;
        const tools: Tool[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: this.config.connectTimeoutMs });
          tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        if (this.client !== client) return;
        this.toolList = tools;
        this.listed = true;
        this.listedBy = client;
        this.emit({ kind: 'tools', tools });
      } while (this.refreshAgain);
    };
    this.refresh = run()
      .catch((error) => {
        this.lastError = messageOf(error);
      })
      .finally(() => {
        this.refresh = null;
      });
    return this.refresh;
  }

  /** After a failed or timed-out call: a server that does not answer a ping is hung (or gone) and is restarted. */
  private checkHealth(client: Client): Promise<void> {
    if (this.client !== client) return Promise.resolve();
    this.healthCheck ??= (async () => {
      try {
        await client.ping({ timeout: this.restart.pingTimeoutMs });
      } catch (error) {
        if (this.client === client) await this.kill(`it did not answer a ping within ${this.restart.pingTimeoutMs} ms (${messageOf(error)})`);
      } finally {
        this.healthCheck = null;
      }
    })();
    return this.healthCheck;
  }

  private lost(client: Client, message: string): void {
    if (this.client !== client || this.stateValue === 'closed') return;
    this.client = undefined;
    this.transport = undefined;
    this.stateValue = 'backoff';
    this.lastError = message;
    const delayMs = Math.min(this.restart.initialDelayMs * 2 ** this.attempt, this.restart.maxDelayMs);
    this.attempt++;
    this.emit({ kind: 'lost', message, restartInMs: delayMs, attempt: this.attempt });
    // Whoever waits for the server hears now that this attempt failed (a call waits for one restart, not for ever).
    this.wakeWaiters();
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.restartCount++;
      void this.connect();
    }, delayMs);
    this.restartTimer.unref();
  }

  private async readyClient(signal: AbortSignal): Promise<Client> {
    if (this.stateValue === 'ready' && this.client !== undefined) return this.client;
    if (this.stateValue === 'closed') throw new HarnessError('MCP_SERVER_UNAVAILABLE', `MCP server "${this.name}" is closed (the mcp plugin was unloaded or reloaded without it).`);
    await this.waitReady(this.config.connectTimeoutMs, signal);
    if (signal.aborted) throw signal.reason;
    if (this.stateValue === 'ready' && this.client !== undefined) return this.client;
    throw new HarnessError(
      'MCP_SERVER_UNAVAILABLE',
      `MCP server "${this.name}" is not available (${this.lastError || 'still starting'}); it was not up within ${this.config.connectTimeoutMs} ms. It is restarted with backoff: try again later.`,
    );
  }

  private waitReady(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if ((this.stateValue === 'ready' && this.client !== undefined) || this.stateValue === 'closed') return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters = this.waiters.filter((waiter) => waiter !== entry);
        resolve();
      };
      const entry = { resolve: done };
      const timer = setTimeout(done, timeoutMs);
      signal?.addEventListener('abort', done, { once: true });
      this.waiters.push(entry);
    });
  }

  private wakeWaiters(): void {
    for (const waiter of [...this.waiters]) waiter.resolve();
  }

  private emit(event: ConnectionEvent): void {
    for (const listener of [...this.subscribers]) {
      try {
        listener(event);
      } catch {
        // A subscriber's failure is its own (each reports through its plugin context).
      }
    }
  }

  private stderrNote(): string {
    const tail = this.stderrTail.trim().split('\n').slice(-3).join(' | ');
    return tail ? `; its stderr ended with: ${tail}` : '';
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
