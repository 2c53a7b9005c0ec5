/**
 * `harness fork <session>` without `--at` forks the whole session, at its last seq (before: a usage
 * error, "required option '--at <seq>' not specified"). A session whose last event is inside a turn
 * (the process died mid-turn) is refused with FORK_INSIDE_TURN, as an explicit seq there is: the
 * message says the seq is the session's last and names a seq that works — and that command runs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harness, journalOf, projectRoot, readEvents, sessionIdOf, tempDir } from './support.ts';

const home = tempDir('fork-default');
const opts = () => ({ home: home.dir });
let journal: string;

beforeAll(async () => {
  const result = await harness(['run', 'What is in this workspace?', '--cwd', join(projectRoot, 'cookbook/demo-workspace')], opts());
  expect(result.code, result.stderr).toBe(0);
  journal = journalOf(result.stdout);
}, 120_000);
afterAll(() => home.cleanup());

/** The `harness …` commands a message suggests in backticks, as arguments of bin/harness.js. */
function suggested(text: string): string[][] {
  return [...text.matchAll(/`node \S*bin\/harness\.js ([^`]+)`/g)].map((m) => m[1]!.split(' '));
}

describe('harness fork without --at', { timeout: 120_000 }, () => {
  it('forks the whole session, at its last seq', async () => {
    const id = sessionIdOf(journal);
    const events = readEvents(journal);
    const last = events.at(-1)!.seq;
    const forked = await harness(['fork', id, '--id', 'whole'], opts());
    expect(forked.stderr).toBe('');
    expect(forked.code).toBe(0);
    expect(forked.stdout).toContain(`forked ${id} at seq ${last} → whole`);
    expect(readEvents(join(home.dir, 'sessions/whole.jsonl'))).toEqual(events);
    const verify = await harness(['replay', 'whole', '--verify'], opts());
    expect(verify.code).toBe(0);
  });

  it('a session that ends inside a turn: FORK_INSIDE_TURN naming its last seq and a seq that works', async () => {
    const lines = readFileSync(journal, 'utf8').split('\n');
    const events = readEvents(journal);
    const inside = events.find((e) => e.type === 'tool/call')!.seq;
    const start = events.filter((e) => e.type === 'turn/start' && e.seq < inside).at(-1)!.seq;
    writeFileSync(join(home.dir, 'sessions/open-turn.jsonl'), `${lines.slice(0, inside + 1).join('\n')}\n`);
    const refused = await harness(['fork', 'open-turn'], opts());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error FORK_INSIDE_TURN: /);
    expect(refused.stderr).toContain(`Seq ${inside} of session ${sessionIdOf(journal)} (its last event) is inside the turn that starts at seq ${start}`);
    expect(refused.stderr).toContain('\nhint: add --close-turn to fork there anyway');
    // One seq named: singular.
    expect(refused.stderr).toContain(`The nearest seq allowed is seq ${start - 1} (before it; the turn has no end yet)`);
    const tries = suggested(refused.stderr);
    expect(tries).toEqual([['fork', 'open-turn', '--at', String(start - 1)]]);
    const retried = await harness([...tries[0]!, '--id', 'before-turn'], opts());
    expect(retried.stderr).toBe('');
    expect(retried.code).toBe(0);
    // The hint's --close-turn works without --at too: the whole session, its open turn closed.
    const closed = await harness(['fork', 'open-turn', '--close-turn', '--id', 'closed'], opts());
    expect(closed.code).toBe(0);
    expect(closed.stdout).toContain(`at seq ${inside} → closed`);
    expect(closed.stdout).toMatch(/closed the open turn with \d+ synthetic event\(s\)/);
  });

  it('fork --help says what it does without --at', async () => {
    const help = await harness(['fork', '--help'], opts());
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('--at <seq> keep the events 1..seq (0 keeps none; default: all of them, to the last seq)');
    expect(help.stdout).toMatch(/^Usage: harness fork \[options\] <session>$/m);
  });
});
