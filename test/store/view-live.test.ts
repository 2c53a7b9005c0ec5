/**
 * `harness view` is live for a session another process is running (issue 19, "Live"): a
 * `harness run` in one process on the scripted model (paced), `harness view` in another; an SSE
 * client of the viewer's API sees the run's events as they are written — the same events as the
 * journal, each exactly once, in seq order — on the file store (its tail follows the journal file
 * another process appends to) and on a PostgreSQL store (`--store postgres://…`). Live, without a
 * clock: the run's command waits for a file the test creates only once the stream has shown the
 * command starting, so everything up to there was streamed while the run was still running.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJournal, storeSource, type AnySessionEvent } from '../../runtime/index.ts';
import { journals, readEvents, start, tempDir, writeProject } from '../cli/support.ts';
import { openStream } from '../serve/support.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { openStore } from './stores.ts';

const project = tempDir('store-view-live');
const children: { kill: (signal: NodeJS.Signals) => boolean }[] = [];
let server: TestPostgres;

// Step 1 runs a command that waits for the file `go`; step 2 streams a long reply, 3 characters every 20 ms.
const LONG = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
const WAIT = 'while [ ! -e go ]; do sleep 0.05; done; echo released';
const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'slow' },
  plugins: [{ name: 'llm-scripted', config: { paceMs: 20, fragmentChars: 3 } }, { name: 'tools-workspace' }, { name: 'approvals' }, { name: 'journal-postgres' }],
  scripts: {
    slow: { replies: [{ when: { step: 1 }, reply: { text: 'Waiting for the go.', toolCalls: [{ name: 'exec_command', arguments: { command: WAIT } }] } }, { reply: { text: LONG } }] },
  },
});

beforeAll(async () => {
  server = await startPostgres();
}, 120_000);
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await server?.stop();
  project.cleanup();
});

/** Starts `harness view` with `args`; its origin and token from the URL it prints. */
async function view(home: string, args: readonly string[]): Promise<{ origin: string; token: string }> {
  const viewer = start(['view', ...args], { home, env: { HARNESS_VIEWER_DIR: join(project.dir, 'no-viewer') } });
  children.push(viewer.child);
  const printed = /^harness view: (\S+)$/m.exec(await viewer.waitFor((out) => /^harness view: \S+$/m.test(out), 'the viewer URL', 90_000))![1]!;
  const url = new URL(printed);
  return { origin: url.origin, token: new URLSearchParams(url.hash.slice(1)).get('token')! };
}

/** Starts `harness run` (approving every call) in a workspace of its own. */
function run(home: string, workspace: string, globals: readonly string[] = []): ReturnType<typeof start> & { exited: Promise<number | null>; hasExited(): boolean } {
  mkdirSync(workspace, { recursive: true });
  const started = start([...globals, 'run', '--config', config, '--cwd', workspace, '--approve', 'allow-all', 'wait for the go, then answer at length'], { home });
  children.push(started.child);
  let exited = false;
  void started.exited.then(() => (exited = true));
  return Object.assign(started, { hasExited: () => exited });
}

/**
 * Streams session `id` from the viewer until its turn/end. At the command's `tool/start`, checks
 * the run is still running (it waits for `go`) and creates `go`.
 */
async function follow(origin: string, token: string, id: string, workspace: string, ran: { hasExited(): boolean }): Promise<{ events: AnySessionEvent[]; released: number }> {
  const stream = openStream(`${origin}/v1/sessions/${encodeURIComponent(id)}/stream`, { token });
  const events: AnySessionEvent[] = [];
  let released = 0;
  try {
    for await (const frame of stream.frames) {
      const event = JSON.parse(frame.data) as AnySessionEvent;
      expect(frame.id).toBe(String(event.seq));
      events.push(event);
      if (event.type === 'tool/start' && released === 0) {
        expect(ran.hasExited()).toBe(false);
        released = event.seq;
        writeFileSync(join(workspace, 'go'), '');
      }
      if (event.type === 'turn/end') break;
    }
  } finally {
    stream.close();
  }
  return { events, released };
}

async function waitFor<T>(what: string, get: () => T | undefined | Promise<T | undefined>, ran: { err(): string; out(): string }): Promise<T> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const value = await get();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the run printed:\n${ran.out()}\n${ran.err()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('harness view of a session another process runs', { timeout: 240_000 }, () => {
  it('streams the run on the file store as it is written: the journal, each event once, in order', async () => {
    const home = join(project.dir, 'home-file');
    const workspace = join(project.dir, 'workspace-file');
    const { origin, token } = await view(home, []);
    const ran = run(home, workspace);
    const name = await waitFor('the journal', () => journals(home)[0], ran);
    const seen = await follow(origin, token, name.slice(0, -'.jsonl'.length), workspace, ran);
    expect(await ran.exited, ran.err()).toBe(0);
    const stored = readEvents(join(home, 'sessions', name));
    expect(seen.events).toEqual(stored);
    expect(seen.events.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
    expect(seen.released).toBeGreaterThan(0);
    expect(seen.events.filter((e) => e.seq > seen.released && e.type === 'assistant/chunk').length).toBeGreaterThan(20);
  });

  it('streams the run on a PostgreSQL store the same way, with harness view --store postgres://… <session>', async () => {
    const home = join(project.dir, 'home-pg');
    const workspace = join(project.dir, 'workspace-pg');
    const url = await server.createDatabase('view');
    const ran = run(home, workspace, ['--store', url]);
    const store = await openStore(url);
    try {
      const id = await waitFor('the session', async () => (await store.list())[0]?.id, ran);
      const { origin, token } = await view(home, ['--store', url, id.slice(0, 8)]);
      const seen = await follow(origin, token, id, workspace, ran);
      expect(await ran.exited, ran.err()).toBe(0);
      const stored: AnySessionEvent[] = [];
      for await (const event of readJournal(storeSource(store, id))) stored.push(event);
      expect(seen.events).toEqual(stored);
      expect(seen.events.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
      expect(seen.released).toBeGreaterThan(0);
      expect(seen.events.filter((e) => e.seq > seen.released && e.type === 'assistant/chunk').length).toBeGreaterThan(20);
    } finally {
      await store.close();
    }
  });
});
