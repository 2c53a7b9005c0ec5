/**
 * The token footer says what it counts — this turn, and the whole session (its journal) — the same
 * way for a new session, a resumed one and each turn of a chat. A journal copied under another file
 * name is listed under the name other commands take, flagged as a copy, and a run resumed from it
 * points its replay hint at the file that exists.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatCost, formatUsage } from '../../cli/format.ts';
import { filesOf, harness, journalOf, projectRoot, readEvents, sessionIdOf, tempDir, writeProject } from './support.ts';

const project = tempDir('footer');
afterAll(() => project.cleanup());

const demo = join(projectRoot, 'cookbook/demo-workspace');
/** USD per million tokens: input 1, output 2. */
const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'scripted-default' },
  plugins: [{ name: 'llm-scripted' }, { name: 'token-meter', config: { prices: { scripted: { '*': { inputTokens: 1, outputTokens: 2 } } } } }, { name: 'tools-workspace' }, { name: 'approvals' }],
});

type Usage = Record<string, number>;
/** The usage of the assistant messages of some turns of a journal, and what it costs at the config's prices. */
function usageOf(path: string, turns: (turn: number) => boolean): { usage: Usage; usd: number } {
  const usage: Usage = {};
  let usd = 0;
  for (const event of readEvents(path)) {
    if (event.type !== 'assistant/message' || !turns(event.data.turn) || !event.data.usage) continue;
    for (const [key, value] of Object.entries(event.data.usage as Usage)) usage[key] = (usage[key] ?? 0) + value;
    usd += ((event.data.usage.inputTokens ?? 0) * 1 + (event.data.usage.outputTokens ?? 0) * 2) / 1_000_000;
  }
  return { usage, usd };
}
const describeUsage = ({ usage, usd }: { usage: Usage; usd: number }) => `${formatUsage(usage)} · cost ${formatCost(usd)}`;
function footer(path: string, turn: number): string {
  const plural = turn === 1 ? '1 turn' : `${turn} turns`;
  return `tokens  this turn: ${describeUsage(usageOf(path, (t) => t === turn))}\n        session:   ${describeUsage(usageOf(path, (t) => t <= turn))} (${plural})`;
}

describe('the token footer', { timeout: 120_000 }, () => {
  it('run, run --resume and chat print this turn and the whole session, with cost', async () => {
    const home = join(project.dir, 'home');
    const first = await harness(['run', 'What is in this workspace?', '--config', config, '--cwd', demo], { home });
    expect(first.code).toBe(0);
    const path = journalOf(first.stdout);
    expect(first.stdout).toContain(footer(path, 1));
    // A resumed session counts its past from the journal: the session line has both turns.
    const second = await harness(['run', 'Look again.', '--resume', sessionIdOf(path), '--config', config], { home });
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(footer(path, 2));
    expect(usageOf(path, (t) => t === 2).usage.inputTokens).toBeGreaterThan(usageOf(path, (t) => t === 1).usage.inputTokens!);
    // A chat: each turn's footer, the session growing.
    const chatHome = join(project.dir, 'home-chat');
    const chat = await harness(['chat', '--config', config, '--cwd', demo], { home: chatHome, input: 'What is in this workspace?\nAnd now?\n' });
    expect(chat.code).toBe(0);
    const chatPath = join(chatHome, 'sessions', filesOf(join(chatHome, 'sessions'))[0]!);
    expect(chat.stdout).toContain(footer(chatPath, 1));
    expect(chat.stdout).toContain(footer(chatPath, 2));
  });
});

describe('a journal copied under another name', { timeout: 120_000 }, () => {
  it('is listed under its file name and flagged as a copy; replay and resume by that name work and the hint names it', async () => {
    const home = join(project.dir, 'home-copy');
    const first = await harness(['run', 'What is in this workspace?', '--config', config, '--cwd', demo], { home });
    const original = journalOf(first.stdout);
    const id = sessionIdOf(original);
    copyFileSync(original, join(home, 'sessions', 'trunc.jsonl'));
    const [list, json, replay] = await Promise.all([
      harness(['sessions', '--config', config], { home }),
      harness(['sessions', '--json', '--config', config], { home }),
      harness(['replay', 'trunc', '--config', config], { home }),
    ]);
    const rows = list.stdout.split('\n');
    expect(rows.find((row) => row.startsWith('trunc '))).toContain(`[copy: its header says session ${id}]`);
    expect(rows.find((row) => row.startsWith(`${id} `))).not.toContain('copy');
    const summaries = json.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(summaries.map((s) => [s.id, s.headerId]).sort()).toEqual(
      [
        [id, undefined],
        ['trunc', id],
      ].sort(),
    );
    expect(replay.code).toBe(0);
    expect(replay.stdout).toContain('turn 1 completed');

    const resumed = await harness(['run', 'Again.', '--resume', 'trunc', '--config', config], { home });
    expect(resumed.code).toBe(0);
    expect(journalOf(resumed.stdout)).toBe(join(home, 'sessions', 'trunc.jsonl'));
    expect(resumed.stdout).toMatch(/^replay {2}node \S+ --config \S+ replay trunc$/m);
    // The original is untouched; the copy has the new turn.
    expect(readEvents(original).filter((e) => e.type === 'turn/end')).toHaveLength(1);
    expect(readEvents(join(home, 'sessions', 'trunc.jsonl')).filter((e) => e.type === 'turn/end')).toHaveLength(2);
  });
});
