/**
 * The CLI on any store (issue 18 "Move sessions between stores"): `harness export` writes a session
 * as the JSONL journal the file store holds, `harness import harness` loads one into the store of
 * `--store` (refusing an id it holds), and run -r, sessions, replay, --verify, --at and fork work
 * on a PostgreSQL store through the same `--store`. The round trip file → postgres → file is
 * byte-equal. A real server (test/support/postgres.ts).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harness, tempDir } from '../cli/support.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';

let server: TestPostgres;
let pg: string;
const home = tempDir('harness-store-cli-');
const workspace = join(home.dir, 'workspace');

beforeAll(async () => {
  mkdirSync(workspace, { recursive: true });
  server = await startPostgres();
  pg = await server.createDatabase('cli');
}, 60_000);

afterAll(async () => {
  await server?.stop();
  home.cleanup();
});

const cli = (args: readonly string[]) => harness(args, { home: join(home.dir, 'home'), cwd: workspace });

describe('harness export / import harness / --store', { timeout: 240_000 }, () => {
  it('round-trips a session file → postgres → file byte for byte, and refuses an id the store holds', async () => {
    const ran = await cli(['run', 'What is in this workspace?']);
    expect(ran.code, ran.stderr).toBe(0);
    const id = /sessions\/([0-9a-f-]{36})\.jsonl/.exec(ran.stdout)![1]!;
    const journal = readFileSync(join(home.dir, 'home', 'sessions', `${id}.jsonl`), 'utf8');

    const file = join(home.dir, 'exported.jsonl');
    const exported = await cli(['export', id.slice(0, 8), '-o', file]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toContain(`exported ${id}`);
    expect(readFileSync(file, 'utf8')).toBe(journal);
    const again = await cli(['export', id, '-o', file]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('error OUTPUT_EXISTS');

    const imported = await cli(['--store', pg, 'import', 'harness', file]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toContain(`→ ${id}`);
    expect(imported.stdout).toContain(`${pg}#${id}`);
    const twice = await cli(['import', 'harness', file, '--store', pg]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('error JOURNAL_EXISTS');

    // From postgres, to stdout: the same bytes; and into a file store named by file:<dir>.
    const back = await cli(['--store', pg, 'export', id]);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toBe(journal);
    const other = join(home.dir, 'other');
    const intoFile = await cli(['--store', `file:${other}`, 'import', 'harness', file]);
    expect(intoFile.code, intoFile.stderr).toBe(0);
    expect(readFileSync(join(other, 'sessions', `${id}.jsonl`), 'utf8')).toBe(journal);
  });

  it('runs, lists, replays, verifies and forks sessions of a PostgreSQL store', async () => {
    const ran = await cli(['--store', pg, 'run', 'What is in this workspace?']);
    expect(ran.code, ran.stderr).toBe(0);
    const id = new RegExp(`${pg.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}#([0-9a-f-]{36})`).exec(ran.stdout)![1]!;
    expect(ran.stdout).toContain(`--store ${pg} replay ${id}`);

    const resumed = await cli(['--store', pg, 'run', '-r', id.slice(0, 8), 'And now?']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('(2 turns)');

    const listed = await cli(['--store', pg, 'sessions', '--json']);
    const summary = listed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; turnCount: number })
      .find((s) => s.id === id);
    expect(summary?.turnCount).toBe(2);

    const verified = await cli(['--store', pg, 'replay', id, '--verify']);
    expect(verified.code, verified.stdout).toBe(0);
    expect(verified.stdout).toContain(`ok ${pg}#${id}`);
    expect(verified.stdout).toContain('2 turns, all closed');

    const forked = await cli(['--store', pg, 'fork', id, '--at', '0', '--id', 'forked-on-pg']);
    expect(forked.code, forked.stderr).toBe(0);
    const json = await cli(['--store', pg, 'replay', 'forked-on-pg', '--json']);
    expect(JSON.parse(json.stdout.split('\n')[0]!)).toMatchObject({ type: 'session', id: 'forked-on-pg', parent: { sessionId: id, seq: 0 } });

    // A password in the URL is never printed.
    const secret = pg.replace('postgres://harness@', 'postgres://harness:s3cret-pw@');
    const withPassword = await cli(['--store', secret, 'sessions']);
    expect(withPassword.code, withPassword.stderr).toBe(0);
    expect(withPassword.stdout).toContain('forked-on-pg');
    expect(withPassword.stdout + withPassword.stderr).not.toContain('s3cret-pw');
  });
});
