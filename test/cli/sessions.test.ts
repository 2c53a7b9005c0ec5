/**
 * `harness replay` on a journal from each of `run`, an imported DeepSeek Harness session and a forked
 * session; `fork --at`, `import dsh`, `sessions` (with its workspace column and filter), `run --resume`
 * on a fork, id prefixes and `-c`.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dshRoot, harness, journalOf, readEvents, sessionIdOf, tempDir } from './support.ts';

const home = tempDir('sessions');
const workspace = tempDir('sessions-ws');
const opts = () => ({ home: home.dir });
let runJournal: string;

beforeAll(async () => {
  const result = await harness(['run', 'What is in this workspace?', '--cwd', join(import.meta.dirname, '../../cookbook/demo-workspace')], opts());
  expect(result.code).toBe(0);
  runJournal = journalOf(result.stdout);
}, 120_000);
afterAll(() => {
  home.cleanup();
  workspace.cleanup();
});

describe('sessions, fork, import, replay', { timeout: 180_000 }, () => {
  it('imports a DeepSeek Harness session (read from ../shared/fixtures) and replays it', async () => {
    const source = join(dshRoot, 'acp-agent/fs-read/session.jsonl');
    const imported = await harness(['import', 'dsh', source, '--id', 'dsh-fs-read'], opts());
    expect(imported.code).toBe(0);
    expect(imported.stdout).toMatch(/^imported .*fs-read\/session\.jsonl → dsh-fs-read \(\d+ events\)$/m);
    const transcript = await harness(['replay', 'dsh-fs-read'], opts());
    expect(transcript.code).toBe(0);
    expect(transcript.stdout).toContain(`imported from dsh ${source}`);
    expect(transcript.stdout).toContain('── turn 1 ──');
    expect(transcript.stdout).toContain('turn 1 completed');
    const verify = await harness(['replay', join(home.dir, 'sessions/dsh-fs-read.jsonl'), '--verify'], opts());
    expect(verify.code).toBe(0);
    const cassette = await harness(['replay', 'dsh-fs-read', '--cassette'], opts());
    expect(cassette.stdout).toContain('same every request, reply, tool result, approval and turn end matches the recording');
    expect(cassette.code).toBe(0);
  });

  it('forks a run at the end of its turn, replays the fork, resumes it with a new turn, and verifies it', async () => {
    const events = readEvents(runJournal);
    const turnEnd = events.find((e) => e.type === 'turn/end')!;
    const fork = await harness(['fork', sessionIdOf(runJournal), '--at', String(turnEnd.seq), '--id', 'forked'], opts());
    expect(fork.code).toBe(0);
    expect(fork.stdout).toContain(`forked ${sessionIdOf(runJournal)} at seq ${turnEnd.seq} → forked`);
    expect(fork.stdout).toContain('run --resume forked "<prompt>"');
    const forkEvents = readEvents(join(home.dir, 'sessions/forked.jsonl'));
    expect(forkEvents).toEqual(events.slice(0, turnEnd.seq));

    const transcript = await harness(['replay', 'forked'], opts());
    expect(transcript.code).toBe(0);
    expect(transcript.stdout).toContain(`fork of ${sessionIdOf(runJournal)} at seq ${turnEnd.seq}`);
    expect(transcript.stdout).toContain('turn 1 completed');

    const resumed = await harness(['run', 'Look again, please.', '--resume', 'forked'], opts());
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain('The user asked: "Look again, please."');
    expect(journalOf(resumed.stdout)).toBe(join(home.dir, 'sessions/forked.jsonl'));
    const after = readEvents(join(home.dir, 'sessions/forked.jsonl'));
    expect(after.filter((e) => e.type === 'turn/end').map((e) => [e.data.turn, e.data.reason])).toEqual([
      [1, 'completed'],
      [2, 'completed'],
    ]);
    expect(after.find((e) => e.type === 'request/header' && e.seq > turnEnd.seq)?.data.reason).toBe('resume');
    const verify = await harness(['replay', 'forked', '--verify'], opts());
    expect(verify.code).toBe(0);
    const cassette = await harness(['replay', 'forked', '--cassette'], opts());
    expect(cassette.stdout).toContain('✓ turn 2 completed');
    expect(cassette.code).toBe(0);
  });

  it('refuses a fork inside a turn with one error line (exit 1), and --close-turn closes it', async () => {
    const events = readEvents(runJournal);
    const inside = events.find((e) => e.type === 'tool/call')!.seq;
    const refused = await harness(['fork', runJournal, '--at', String(inside)], opts());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^error FORK_INSIDE_TURN: .*\nhint: add --close-turn to fork there anyway \(the fork closes the open turn with synthetic events\), or fork at a seq outside the turn\.\n$/,
    );
    // The message names the nearest seqs a fork may take, as commands; no API names.
    const start = events.filter((e) => e.type === 'turn/start' && e.seq < inside).at(-1)!.seq;
    const end = events.find((e) => e.type === 'turn/end' && e.seq > inside)!.seq;
    expect(refused.stderr).toContain(
      `is inside the turn that starts at seq ${start}: a fork there would cut a turn in half. The nearest seqs allowed are seq ${start - 1} (before it) or seq ${end} (its end):`,
    );
    expect(refused.stderr).toContain(`fork ${runJournal} --at ${start - 1}\` or \``);
    expect(refused.stderr).not.toMatch(/closeOpenTurn|forkSession|\{ /);
    const closed = await harness(['fork', runJournal, '--at', String(inside), '--close-turn', '--id', 'closed'], opts());
    expect(closed.code).toBe(0);
    expect(closed.stdout).toMatch(/closed the open turn with \d+ synthetic event\(s\)/);
    const verify = await harness(['replay', 'closed', '--verify'], opts());
    expect(verify.code).toBe(0);
  });

  it('lists the sessions with id, title, turns, tokens and last update', async () => {
    const list = await harness(['sessions'], opts());
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TITLE\s+WORKSPACE\s+TURNS\s+TOKENS in\/out\s+UPDATED$/);
    const row = lines.find((line) => line.startsWith(sessionIdOf(runJournal)))!;
    expect(row).toMatch(/What is in this workspace\?\s+\S*cookbook\/demo-workspace\s+1\s+\d+(\.\d)?k\/\d+\s+(\d+s|\d+ min) ago$/);
    expect(lines.find((line) => line.startsWith('forked'))).toMatch(/What is in this workspace\?\s+\S*cookbook\/demo-workspace\s+2\s/);
    expect(lines.find((line) => line.startsWith('dsh-fs-read'))).toMatch(/\s1\s/);
    expect(lines.at(-1)).toMatch(/^\d+ sessions in /);
    const json = await harness(['sessions', '--json'], opts());
    const ids = json.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).id);
    expect(ids).toEqual(expect.arrayContaining([sessionIdOf(runJournal), 'forked', 'dsh-fs-read', 'closed']));
    expect(JSON.parse(json.stdout.split('\n')[0]!).cwd).toEqual(expect.any(String));
  });

  it('finds sessions by a unique id prefix; an ambiguous prefix lists the candidates', async () => {
    const id = sessionIdOf(runJournal);
    const byPrefix = await harness(['replay', id.slice(0, 8)], opts());
    expect(byPrefix.code).toBe(0);
    expect(byPrefix.stdout).toContain(`session ${id}`);
    for (const twin of ['twin-a', 'twin-b']) expect((await harness(['fork', id, '--at', '0', '--id', twin], opts())).code).toBe(0);
    const ambiguous = await harness(['replay', 'twin'], opts());
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toBe('error AMBIGUOUS_SESSION: "twin" is the start of 2 session ids: twin-a, twin-b. Give more of the id.\n');
    const resumed = await harness(['run', 'Hello again.', '--resume', 'twin-b'], opts());
    expect(resumed.code).toBe(0);
    expect(journalOf(resumed.stdout)).toBe(join(home.dir, 'sessions/twin-b.jsonl'));
  });

  it("-c continues the latest session of the workspace; sessions -w lists only that workspace's", async () => {
    const other = join(workspace.dir, 'other');
    mkdirSync(other, { recursive: true });
    const mine = await harness(['run', 'A session of the other workspace.', '--cwd', other], opts());
    expect(mine.code).toBe(0);
    // A newer session elsewhere does not count for -c in `other`.
    const demo = join(import.meta.dirname, '../../cookbook/demo-workspace');
    expect((await harness(['run', 'Newer, elsewhere.', '--cwd', demo], opts())).code).toBe(0);
    const continued = await harness(['run', 'Go on.', '-c'], { ...opts(), cwd: other });
    expect(continued.code).toBe(0);
    expect(journalOf(continued.stdout)).toBe(journalOf(mine.stdout));
    expect(readEvents(journalOf(mine.stdout)).filter((e) => e.type === 'turn/start')).toHaveLength(2);
    const listed = await harness(['sessions', '--workspace', other, '--json'], opts());
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).id),
    ).toEqual([sessionIdOf(journalOf(mine.stdout))]);
    const none = await harness(['run', 'Go on.', '--continue', '--cwd', join(workspace.dir)], opts());
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^error NO_SESSION_TO_CONTINUE: No session of the workspace /);
    const both = await harness(['run', 'Go on.', '-c', '-r', 'twin-a'], { ...opts(), cwd: other });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^error INVALID_ARGUMENTS: --continue and --resume cannot be combined/);
  });

  it('a session that does not exist is one error line naming the path, and a hint to list them', async () => {
    const result = await harness(['replay', 'no-such-session'], opts());
    expect(result.code).toBe(1);
    const [error, hint, ...rest] = result.stderr.split('\n');
    expect(error).toBe(`error JOURNAL_NOT_FOUND: No journal at ${join(home.dir, 'sessions/no-such-session.jsonl')}.`);
    expect(hint).toMatch(/^hint: `.+ sessions` lists the sessions in /);
    expect(rest).toEqual(['']);
  });
});
