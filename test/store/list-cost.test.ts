/**
 * The session list reads each journal once (issue 19: the viewer's list used to read every
 * journal a second time to price it): `GET /v1/sessions` prices each session from its summary's
 * usage by model, reading no journal through the store, and the cost it lists is the one the
 * session's own page shows (priced call by call from the journal).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, FileJournalStore, type Harness, type JournalLine, type ReadRange } from '../../runtime/index.ts';
import { serveConfigSchema, startServer, type RunningServer } from '../../plugins/serve/index.ts';
import { plugin, tempDir } from '../agent/support.ts';

const TOKEN = 'list-cost-token-0123456789abcdef';
/** USD per million tokens. */
const PRICE = { inputTokens: 3, outputTokens: 15 };

/** The file store, counting the sessions it reads (`read` is how every journal reader reaches it). */
class CountingStore extends FileJournalStore {
  readonly reads: string[] = [];
  override read(idOrPath: string, range?: ReadRange): AsyncGenerator<readonly JournalLine[], void, undefined> {
    this.reads.push(idOrPath);
    return super.read(idOrPath, range);
  }
}

const dir = tempDir('harness-list-cost-');
const store = new CountingStore({ dataDir: join(dir, 'data') });
let harness: Harness;
let server: RunningServer;

beforeAll(async () => {
  const script = join(dir, 'script.json');
  writeFileSync(
    script,
    JSON.stringify({
      replies: [
        { when: { userIncludes: 'small' }, reply: { text: 'Small.', usage: { inputTokens: 1000, outputTokens: 200 } } },
        { reply: { text: 'Big.', usage: { inputTokens: 50_000, outputTokens: 4000 } } },
      ],
    }),
  );
  harness = await createHarness({
    dataDir: join(dir, 'data'),
    store,
    config: {
      defaults: { provider: 'scripted', model: 'test' },
      plugins: [
        { module: plugin('llm-scripted'), config: { scripts: { test: script } } },
        { module: plugin('token-meter'), config: { prices: { scripted: { test: PRICE } } } },
      ],
    },
  });
  for (const prompt of ['a small one', 'a big one', 'a small one again']) {
    const session = await harness.createSession({ cwd: dir });
    await session.prompt(prompt);
    if (prompt.endsWith('again')) await session.prompt('and a big one');
  }
  server = await startServer(harness, serveConfigSchema.parse({ port: 0 }), { token: TOKEN, cwd: dir });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await harness?.dispose();
});

const get = async (path: string): Promise<any> => {
  const response = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  return response.json();
};

describe('the session list', () => {
  it('prices every session without reading its journal again, at the cost its own page shows', async () => {
    store.reads.length = 0;
    const { sessions } = (await get('/v1/sessions')) as { sessions: { id: string; costUsd?: number }[] };
    expect(store.reads).toEqual([]);
    expect(sessions).toHaveLength(3);
    const usd = (input: number, output: number) => (input * PRICE.inputTokens + output * PRICE.outputTokens) / 1e6;
    const listed = sessions.map((s) => s.costUsd!).sort((a, b) => a - b);
    const expected = [usd(1000, 200), usd(50_000, 4000), usd(51_000, 4200)];
    for (const [i, cost] of expected.entries()) expect(listed[i]).toBeCloseTo(cost, 12);
    for (const row of sessions) {
      const { session } = (await get(`/v1/sessions/${row.id}`)) as { session: { costUsd?: number } };
      expect(row.costUsd).toBeCloseTo(session.costUsd!, 12);
    }
  });
});
