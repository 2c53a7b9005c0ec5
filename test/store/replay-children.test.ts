/**
 * `harness replay` of a parent on a PostgreSQL store shows its children (subagents) indented where
 * the parent ran them, as on the file store: the children are found and read through the store,
 * not through journal files. A real server (test/support/postgres.ts).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type JournalStore } from '../../runtime/index.ts';
import { tempDir } from '../agent/support.ts';
import { harness as cli } from '../cli/support.ts';
import { delegation, subagentConfig } from '../subagents/support.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { openStore } from './stores.ts';

let server: TestPostgres;
let store: JournalStore;
let parentId: string;
const dir = tempDir('harness-store-children-');

beforeAll(async () => {
  server = await startPostgres();
  store = await openStore(server.url);
  const harness = await createHarness({ dataDir: join(dir, 'data'), store, config: subagentConfig(delegation, dir) });
  try {
    const parent = await harness.createSession({ cwd: dir });
    await parent.prompt('delegate this', { approve: () => 'allow' });
    parentId = parent.id;
  } finally {
    await harness.dispose();
  }
}, 120_000);

afterAll(async () => {
  await store?.close();
  await server?.stop();
});

describe('harness replay of a parent on a PostgreSQL store', () => {
  it("prints the child's steps indented under the call that spawned it, and rolls its tokens up", { timeout: 120_000 }, async () => {
    const result = await cli(['--store', server.url, 'replay', parentId], { home: join(dir, 'home'), cwd: dir });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    const at = (text: string) => lines.findIndex((line) => line.includes(text));
    expect(at('→ run_subagent')).toBeGreaterThan(-1);
    expect(at(`↳ subagent ${parentId}.sub1`)).toBeGreaterThan(at('→ run_subagent'));
    expect(lines[at(`↳ subagent ${parentId}.sub1`)]).toMatch(/^ {6}↳ subagent/);
    expect(lines[at('→ poke')]).toMatch(/^ {12}→ poke/);
    expect(at('→ poke')).toBeGreaterThan(at('↳ subagent'));
    expect(at('CHILD_OK')).toBeGreaterThan(at('✓ poke'));
    expect(at('PARENT_DONE')).toBeGreaterThan(at('✓ run_subagent'));
    expect(result.stdout).toMatch(/· 250 in · 25 out · subagents 100 in · 10 out/);
  });
});
