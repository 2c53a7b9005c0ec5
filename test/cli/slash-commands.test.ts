/**
 * Chat slash commands (issue 17, 1), with piped input (each line is what a user types): `/model`
 * switches the model and the next request carries it (journaled as a change of the call), an unknown
 * `/word` is an error listing the commands and is never sent to the model, `/approve`, `/cost`,
 * `/tools` and `/help` answer without a turn; `/compact` summarises the older turns now, `/fork`
 * goes on in a new session (a seq inside a turn is refused, naming the nearest allowed ones) and
 * `/resume` goes on in another.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, journals, projectRoot, readEvents, tempDir, writeProject } from './support.ts';

const project = tempDir('slash');
afterAll(() => project.cleanup());

const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'first' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }, { name: 'token-meter', config: { prices: { scripted: { '*': { inputTokens: 0, outputTokens: 0 } } } } }],
  scripts: { first: { replies: [{ reply: { text: 'Answer of the first model.' } }] }, second: { replies: [{ reply: { text: 'Answer of the second model.' } }] } },
});
const demo = join(projectRoot, 'cookbook/demo-workspace');

describe('chat slash commands', { timeout: 120_000 }, () => {
  it('/model switches the next request; an unknown /word is an error, not a prompt; /approve, /cost, /tools, /help answer', async () => {
    const home = join(project.dir, 'home');
    const input = ['Hello.', '/nope what', '/model scripted/second', 'Again.', '/approve allow-all', '/approve maybe', '/cost', '/tools', '/help', '/model no-such-model', '/exit'].join('\n');
    const result = await harness(['chat', '--config', config, '--cwd', demo], { home, input: `${input}\n` });
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toContain('Answer of the first model.');
    expect(out).toContain(
      'error UNKNOWN_COMMAND: /nope is not a chat command (nothing was sent to the model). Commands: /help /model /approve /cost /tools /sessions /resume /fork /compact /session /exit.',
    );
    expect(out).toContain('model scripted/second — the next request uses it');
    expect(out).toContain('Answer of the second model.');
    expect(out).toContain('approvals allow-all from now on');
    expect(out).toContain('error INVALID_ARGUMENTS: /approve takes a policy: allow-all, read-only, always-ask, deny-all (now: allow-all).');
    expect(out).toMatch(/tokens {2}this turn: .* · cost \$0\.00\n {8}session: {3}.* \(2 turns\)/);
    expect(out).toContain('  read_file (tools-workspace)');
    expect(out).toContain('/model [provider/]model');
    expect(out).toMatch(/error UNKNOWN_MODEL: /);
    // Two prompts reached the model, each through the model of its time; the switch is journaled.
    const events = readEvents(join(home, 'sessions', journals(home)[0]!));
    expect(events.filter((e) => e.type === 'user/message').map((e) => e.data.message.content[0].text)).toEqual(['Hello.', 'Again.']);
    expect(events.filter((e) => e.type === 'request/header').map((e) => [e.data.header.config.model, e.data.reason])).toEqual([
      ['first', 'initial'],
      ['second', 'change'],
    ]);
  });
});

const compactingConfig = writeProject(join(project.dir, 'compacting'), {
  defaults: { provider: 'scripted', model: 'first' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }, { name: 'compaction', config: { keepTurns: 1 } }],
  scripts: { first: { replies: [{ when: { purpose: 'compaction' }, reply: { text: 'Summary: the user greeted twice.' } }, { reply: { text: 'An answer.' } }] } },
});

describe('chat /compact, /fork and /resume', { timeout: 120_000 }, () => {
  it('compacts on request, forks (not inside a turn) and goes on in the fork, resumes the original by an id prefix', async () => {
    const home = join(project.dir, 'home-fork');
    const input = ['Hello.', '/compact', 'Again.', '/compact', '/fork 3', '/fork', 'In the fork.', '/resume no-such-session', '/resume ORIGINAL', 'Back in the original.', '/exit'];
    // The original's id is known only once it exists: run the first part, then resume it.
    const first = await harness(['chat', '--config', compactingConfig, '--cwd', demo], { home, input: `${input.slice(0, 7).join('\n')}\n/exit\n` });
    expect(first.code).toBe(0);
    const out = first.stdout;
    expect(out).toContain('nothing to compact: there are no turns older than the ones kept verbatim');
    expect(out).toContain('compacted: 4 messages → 3 (a summary, then the turns kept verbatim)');
    const forkLine = /forked (\S+) at seq (\d+) → (\S+) — the chat goes on in the fork/.exec(out)!;
    expect(forkLine).not.toBeNull();
    const [, originalId, atSeq, forkId] = forkLine;
    const original = readEvents(join(home, 'sessions', `${originalId}.jsonl`));
    // /fork 3 is inside turn 1: the message names the seq before it and the seq of its end, as /fork commands.
    const turn1Start = original.find((e) => e.type === 'turn/start')!.seq;
    const turn1End = original.find((e) => e.type === 'turn/end')!.seq;
    expect(out).toContain(
      `error FORK_INSIDE_TURN: Seq 3 of session ${originalId} is inside the turn that starts at seq ${turn1Start}: a fork there would cut a turn in half. The nearest seqs allowed are seq ${turn1Start - 1} (before it) or seq ${turn1End} (its end): /fork ${turn1Start - 1} or /fork ${turn1End}.`,
    );
    expect(out).not.toMatch(/closeOpenTurn|forkSession/);
    // The compaction on request is journaled in the original; the fork has all of it, then its own turn.
    expect(original.filter((e) => e.type.startsWith('compaction/')).map((e) => [e.type, e.data.trigger ?? e.data.outcome])).toEqual([
      ['compaction/start', 'request'],
      ['compaction/summary', undefined],
      ['compaction/end', 'compacted'],
    ]);
    expect(Number(atSeq)).toBe(original.at(-1)!.seq);
    const forkPath = join(home, 'sessions', `${forkId}.jsonl`);
    expect(JSON.parse(readFileSync(forkPath, 'utf8').split('\n')[0]!).parent).toEqual({ sessionId: originalId, seq: Number(atSeq) });
    const fork = readEvents(forkPath);
    expect(fork.filter((e) => e.type === 'user/message').map((e) => e.data.message.content[0].text)).toEqual(['Hello.', 'Again.', 'In the fork.']);
    expect(original.filter((e) => e.type === 'turn/end')).toHaveLength(2);

    // /resume: an unknown one changes nothing; a prefix of the original goes on in it, its last turns shown first.
    const second = await harness(['chat', '-r', forkId!, '--config', compactingConfig, '--cwd', demo], {
      home,
      input: `${input.slice(7).join('\n').replace('ORIGINAL', originalId!.slice(0, 8))}\n`,
    });
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/error JOURNAL_NOT_FOUND: /);
    expect(second.stdout).toContain(`resumed session ${originalId} · scripted/first`);
    expect(second.stdout).toContain('── the session so far (2 turns) ──');
    expect(second.stdout).toMatch(new RegExp(`journal \\S+${originalId}\\.jsonl\\n`));
    const resumed = readEvents(join(home, 'sessions', `${originalId}.jsonl`));
    expect(resumed.filter((e) => e.type === 'user/message').map((e) => e.data.message.content[0].text)).toEqual(['Hello.', 'Again.', 'Back in the original.']);
    expect(readEvents(forkPath).filter((e) => e.type === 'turn/end')).toHaveLength(3);
  });
});
