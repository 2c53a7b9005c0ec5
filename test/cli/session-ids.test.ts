/**
 * Small things of naming and listing sessions: `fork --id ""` silently made a random id (now a usage
 * error); a cassette update's `<id>.update-1` made the 8-character prefix of `<id>` ambiguous
 * (`harness export 9b2419b8` → AMBIGUOUS_SESSION; now the prefix names the session its derived
 * copies come from); an empty journal was listed as UPDATED `1970-01-01` (now the file's time).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseOf, journalOfPrefix } from '../../cli/find-session.ts';
import { columnsOf, formatAgo } from '../../cli/format.ts';
import { harness, projectRoot, tempDir } from './support.ts';

const home = tempDir('session-ids');
const opts = () => ({ home: home.dir });
let id: string;
let journal: string;

beforeAll(async () => {
  const result = await harness(['run', 'What is in this workspace?', '--cwd', join(projectRoot, 'cookbook/demo-workspace'), '--approve', 'deny-all'], opts());
  expect(result.code, result.stderr).toBe(0);
  id = /sessions\/([0-9a-f-]{36})\.jsonl/.exec(result.stdout)![1]!;
  journal = readFileSync(join(home.dir, 'sessions', `${id}.jsonl`), 'utf8');
}, 120_000);
afterAll(() => home.cleanup());

describe('session ids and prefixes', { timeout: 120_000 }, () => {
  it('fork --id "" is refused as a usage error (before: a random id)', async () => {
    const forked = await harness(['fork', id, '--at', '0', '--id', ''], opts());
    expect(forked.code).toBe(2);
    expect(forked.stderr).toContain("option '--id <id>' argument '' is invalid. an empty id");
    expect(forked.stdout).toBe('');
  });

  it('a prefix of a session with a cassette update names the session, not its update (before: AMBIGUOUS_SESSION)', async () => {
    const updateId = `${id}.update-1`;
    const [header, ...rest] = journal.split('\n');
    writeFileSync(join(home.dir, 'sessions', `${updateId}.jsonl`), [header!.replace(id, updateId), ...rest].join('\n'));
    const exported = await harness(['export', id.slice(0, 8)], opts());
    expect(exported.stderr).toBe('');
    expect(exported.code).toBe(0);
    expect(exported.stdout).toBe(journal);
    // The update is still named by its own prefix.
    const update = await harness(['replay', `${id}.upd`, '--json'], opts());
    expect(update.code, update.stderr).toBe(0);
    expect(update.stdout).toContain(updateId);
  });

  it('lines up the sessions table in terminal columns: a CJK title takes two per character (before: the columns after it moved right)', async () => {
    const own = tempDir('session-ids-wide');
    try {
      const demo = join(projectRoot, 'cookbook/demo-workspace');
      for (const prompt of ['日本語のテスト', 'plain ascii title']) {
        const ran = await harness(['run', prompt, '--cwd', demo, '--approve', 'deny-all'], { home: own.dir });
        expect(ran.code, ran.stderr).toBe(0);
      }
      const listed = await harness(['sessions', '--no-color'], { home: own.dir });
      const rows = listed.stdout.split('\n').filter((line) => line.includes('demo-workspace'));
      expect(rows).toHaveLength(2);
      // Where WORKSPACE starts, in terminal columns: the same on both rows.
      const starts = rows.map((row) => columnsOf(row.slice(0, row.search(/\S*demo-workspace/))));
      expect(starts[0]).toBe(starts[1]);
      expect(rows.some((row) => row.includes('日本語のテスト'))).toBe(true);
    } finally {
      own.cleanup();
    }
  });

  it('lists an empty journal with its file time, not 1970-01-01', async () => {
    writeFileSync(join(home.dir, 'sessions', 'empty-one.jsonl'), '');
    const listed = await harness(['sessions'], opts());
    const row = listed.stdout.split('\n').find((line) => line.startsWith('empty-one'));
    expect(row, listed.stdout).toBeDefined();
    expect(row).not.toContain('1970');
    expect(row).toMatch(/\ds ago/);
  });
});

describe('baseOf and formatAgo', () => {
  it('picks the id the others derive from, only when there is one', () => {
    expect(baseOf(['a1', 'a1.update-1', 'a1.sub1'])).toBe('a1');
    expect(baseOf(['a1', 'a12'])).toBeUndefined();
    expect(baseOf(['a1.update-1', 'a1.update-2'])).toBeUndefined();
  });
  it('matches a prefix against ids, not file names: "<id>." is the start of its derived copies only', () => {
    const data = join(home.dir, 'prefix-data');
    mkdirSync(join(data, 'sessions'), { recursive: true });
    for (const name of ['a1', 'a1.update-1', 'a1.x']) writeFileSync(join(data, 'sessions', `${name}.jsonl`), '');
    expect(journalOfPrefix('a', data)).toBe(join(data, 'sessions', 'a1.jsonl'));
    // Before: 'a1.jsonl' starts with 'a1.' too, so the session itself was picked.
    expect(() => journalOfPrefix('a1.', data)).toThrow('"a1." is the start of 2 session ids: a1.update-1, a1.x. Give more of the id.');
    expect(journalOfPrefix('a1.u', data)).toBe(join(data, 'sessions', 'a1.update-1.jsonl'));
    expect(journalOfPrefix('a1.j', data)).toBeUndefined();
  });
  it('shows an unknown time as —', () => {
    expect(formatAgo(0)).toBe('—');
  });
});
