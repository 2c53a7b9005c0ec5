/** A served harness for tests: the scripted model, approvals, test tools, a server on 127.0.0.1:0. */
import { createHarness, defineTool, z, type AnySessionEvent, type Harness } from '../../runtime/index.ts';
import { serveConfigSchema, startServer, type RunningServer, type ServeSettings } from '../../plugins/serve/index.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { plugin, tempDir } from '../agent/support.ts';

export const TOKEN = 'test-token-0123456789abcdef';

/** Replies by prompt: "poke …" asks for the write tool `poke` then answers; "long …" streams slowly; anything else is one short line. */
export const SCRIPT = {
  replies: [
    { when: { userIncludes: 'poke', step: 1 }, reply: { text: 'Poking.', toolCalls: [{ name: 'poke', arguments: { key: 'k', value: 'v' } }] } },
    { when: { userIncludes: 'poke', step: 2 }, reply: { text: 'Poked.' } },
    {
      when: { userIncludes: 'peek', step: 1 },
      reply: {
        toolCalls: [
          { name: 'peek', arguments: { key: 'a' } },
          { name: 'peek', arguments: { key: 'b' } },
        ],
      },
    },
    { when: { userIncludes: 'peek', step: 2 }, reply: { text: 'Peeked twice.' } },
    { when: { userIncludes: 'long' }, reply: { text: 'word '.repeat(120) } },
    { reply: { text: 'Hello from the scripted model.' } },
  ],
};

export interface Served {
  readonly harness: Harness;
  readonly server: RunningServer;
  readonly dir: string;
  readonly ran: string[];
  /** fetch against the server with the token (or `token: null` for none). */
  api(method: string, path: string, body?: unknown, options?: { token?: string | null; headers?: Record<string, string>; raw?: string }): Promise<{ status: number; body: any; text: string }>;
  close(): Promise<void>;
}

/** `store`: the harness's store (default the file store of a temp data directory), e.g. a `postgres://` URL. */
export async function serve(settings: Partial<ServeSettings> = {}, options: { paceMs?: number; store?: string } = {}): Promise<Served> {
  const dir = tempDir('harness-serve-');
  const scriptPath = join(dir, 'script.json');
  writeFileSync(scriptPath, JSON.stringify(SCRIPT));
  const harness = await createHarness({
    dataDir: join(dir, 'data'),
    ...(options.store ? { store: options.store } : {}),
    config: {
      defaults: { provider: 'scripted', model: 'test' },
      plugins: [
        { module: plugin('llm-scripted'), config: { paceMs: options.paceMs ?? 0, fragmentChars: 5, scripts: { test: scriptPath } } },
        { module: plugin('approvals') },
        ...(options.store?.startsWith('postgres') ? [{ module: plugin('journal-postgres'), config: { tailPollMs: 200 } }] : []),
      ],
    },
  });
  const ran: string[] = [];
  harness.ctx.tools.register(
    defineTool({ name: 'peek', description: 'Reads a value.', input: z.object({ key: z.string() }), permission: 'read', execute: ({ key }) => (ran.push(`peek:${key}`), `value of ${key}`) }),
  );
  harness.ctx.tools.register(
    defineTool({
      name: 'poke',
      description: 'Writes a value.',
      input: z.object({ key: z.string(), value: z.string() }),
      permission: 'write',
      execute: ({ key, value }) => (ran.push(`poke:${key}=${value}`), 'ok'),
    }),
  );
  const server = await startServer(harness, serveConfigSchema.parse({ port: 0, ...settings }), { token: TOKEN, cwd: dir });
  return {
    harness,
    server,
    dir,
    ran,
    async api(method, path, body, opts = {}) {
      const token = opts.token === undefined ? TOKEN : opts.token;
      const headers: Record<string, string> = {
        ...(token === null ? {} : { authorization: `Bearer ${token}` }),
        ...(body !== undefined || opts.raw !== undefined ? { 'content-type': 'application/json' } : {}),
        ...opts.headers,
      };
      const response = await fetch(`${server.url}${path}`, { method, headers, ...(opts.raw !== undefined ? { body: opts.raw } : body !== undefined ? { body: JSON.stringify(body) } : {}) });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { status: response.status, body: parsed, text };
    },
    async close() {
      await server.close();
      await harness.dispose();
    },
  };
}

/** One SSE frame as a client sees it. */
export interface Frame {
  readonly id?: string;
  readonly data: string;
}

/**
 * An SSE client over fetch (a browser's EventSource cannot send a bearer header; fetch can): frames
 * as they arrive; `close()` drops the connection.
 */
export function openStream(url: string, options: { token?: string; lastEventId?: string } = {}): { frames: AsyncGenerator<Frame>; close(): void; status: Promise<number> } {
  const controller = new AbortController();
  let setStatus!: (status: number) => void;
  const status = new Promise<number>((resolve) => (setStatus = resolve));
  async function* frames(): AsyncGenerator<Frame> {
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${options.token ?? TOKEN}`, accept: 'text/event-stream', ...(options.lastEventId ? { 'last-event-id': options.lastEventId } : {}) },
      signal: controller.signal,
    });
    setStatus(response.status);
    if (!response.ok || response.body === null) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end: number;
        for (end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let id: string | undefined;
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) yield { ...(id === undefined ? {} : { id }), data: data.join('\n') };
        }
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
  }
  return { frames: frames(), close: () => controller.abort(), status };
}

/** Reads frames until `until` says stop (inclusive), returning the events. */
export async function readUntil(frames: AsyncGenerator<Frame>, until: (event: AnySessionEvent) => boolean): Promise<AnySessionEvent[]> {
  const out: AnySessionEvent[] = [];
  for await (const frame of frames) {
    const event = JSON.parse(frame.data) as AnySessionEvent;
    if (String(event.seq) !== frame.id) throw new Error(`frame id ${frame.id} is not the event's seq ${event.seq}`);
    out.push(event);
    if (until(event)) break;
  }
  return out;
}
