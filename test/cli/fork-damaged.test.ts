/**
 * `harness fork` on a damaged journal (a corrupt line inside its second turn) names only forks that
 * work, and each one it names runs. Before, FORK_INSIDE_TURN's message read the journal with salvage,
 * past the damage, and offered `--at <the turn's end>` — a seq after the damaged line, which the fork
 * itself refuses with JOURNAL_CORRUPT; and a fork at (or without --at, to) the end got JOURNAL_CORRUPT
 * with only replay hints, no seq a fork can take.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harness, journalOf, projectRoot, readEvents, tempDir } from './support.ts';

const home = tempDir('fork-damaged');
const opts = () => ({ home: home.dir });
let events: { seq: number; type: string }[];
let damagedLine: number;

beforeAll(async () => {
  const first = await harness(['run', 'What is in this workspace?', '--cwd', join(projectRoot, 'cookbook/demo-workspace')], opts());
  expect(first.code, first.stderr).toBe(0);
  const journal = journalOf(first.stdout);
  const second = await harness(['run', 'Look again, please.', '--resume', journal], opts());
  expect(second.code, second.stderr).toBe(0);
  events = readEvents(journal);
  // Damage a line in the middle of the second turn: its second tool/call (line seq + 1).
  const damagedSeq = events.filter((e) => e.type === 'tool/call').at(-1)!.seq;
  damagedLine = damagedSeq + 1;
  const lines = readFileSync(journal, 'utf8').split('\n');
  lines[damagedLine - 1] = lines[damagedLine - 1]!.slice(0, 25);
  writeFileSync(join(home.dir, 'sessions/damaged.jsonl'), lines.join('\n'));
}, 120_000);
afterAll(() => home.cleanup());

/** The `harness …` commands a line suggests in backticks, as arguments of bin/harness.js. */
function suggested(line: string): string[][] {
  return [...line.matchAll(/`node \S*bin\/harness\.js ([^`]+)`/g)].map((m) => m[1]!.split(' '));
}

/** Runs each command (a fork gets an id of its own); all must succeed. */
async function runAll(commands: string[][]): Promise<void> {
  let n = 0;
  for (const args of commands) {
    const result = await harness(args[0] === 'fork' ? [...args, '--id', `retry-${++n}-${Date.now()}`] : args, opts());
    expect(result.code, `${args.join(' ')} → ${result.stderr}`).toBe(0);
  }
}

describe('fork of a damaged journal', { timeout: 180_000 }, () => {
  it('FORK_INSIDE_TURN names no seq past the damaged line, and what it names runs', async () => {
    const turns = events.filter((e) => e.type === 'turn/start');
    const secondStart = turns[1]!.seq;
    const inside = secondStart + 2;
    expect(inside).toBeLessThan(damagedLine - 1);
    const refused = await harness(['fork', 'damaged', '--at', String(inside)], opts());
    expect(refused.code).toBe(1);
    const [error, hint] = refused.stderr.trimEnd().split('\n');
    expect(error).toMatch(/^error FORK_INSIDE_TURN: /);
    expect(error).toContain(`seq ${secondStart - 1} (before it; the journal is damaged from line ${damagedLine}, before the turn's end)`);
    const tries = suggested(error!);
    expect(tries).toEqual([['fork', 'damaged', '--at', String(secondStart - 1)]]);
    await runAll(tries);
    // The hint's way works too.
    expect(hint).toMatch(/^hint: add --close-turn to fork there anyway/);
    await runAll([['fork', 'damaged', '--at', String(inside), '--close-turn']]);
  });

  it('a fork at the end, or without --at, is JOURNAL_CORRUPT naming forks before the damage that run, and the hint runs', async () => {
    const last = events.at(-1)!.seq;
    const secondStart = events.filter((e) => e.type === 'turn/start')[1]!.seq;
    for (const args of [
      ['fork', 'damaged'],
      ['fork', 'damaged', '--at', String(last)],
    ]) {
      const refused = await harness(args, opts());
      expect(refused.code).toBe(1);
      const [error, hint] = refused.stderr.trimEnd().split('\n');
      expect(error).toMatch(new RegExp(`^error JOURNAL_CORRUPT: \\S+damaged\\.jsonl:${damagedLine}: corrupt journal line`));
      const tries = suggested(error!);
      expect(tries).toEqual([
        ['fork', 'damaged', '--at', String(secondStart - 1)],
        ['fork', 'damaged', '--at', String(damagedLine - 2), '--close-turn'],
      ]);
      await runAll(tries);
      // The hint's commands: --salvage reads past the damage (exit 0); --verify lists it (exit 1 on damage, by design).
      const [salvage, verify] = suggested(hint!);
      expect(salvage).toEqual(['replay', expect.any(String), '--salvage']);
      await runAll([salvage!]);
      const listed = await harness(verify!, opts());
      expect(listed.stdout).toContain(`damaged.jsonl:${damagedLine}: corrupt journal line`);
    }
  });
});
