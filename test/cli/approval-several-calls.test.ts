/**
 * Approval questions when one model step asks for several tool calls, in a real terminal (tmux), for
 * `harness run` and `harness chat`. The loop journals every call of the step before it asks about
 * the first, so the renderer got the second call's `→` line while the first call's question was
 * waiting for an answer, and printed it after the question, on the question's line:
 * `? allow exec_command (write)? [y/N, a = always in this session] → write_file {…}` — a question
 * that read as being about write_file while the answer went to exec_command. Now each question comes
 * right after its own call's line, on a line of its own, and the lines of the later calls wait until
 * the question has been answered and its decision shown.
 *
 * A subagent's calls go through the same questions (inherited approvals, with an origin): the CLI
 * waited for a `→` line of the parent's with the child's call id, which never came, so the run hung
 * with a spinner; now the child's question comes below its `[sub1] →` line, after the parent's
 * question is answered (one question at a time).
 *
 * Needs tmux (`apt-get install tmux`; .ci/run installs it). Without tmux the test is skipped locally
 * and fails on CI.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, cleanEnv, journals, readEvents, tempDir, writeProject } from './support.ts';
import { hasTmux, Terminal } from './terminal.ts';

const project = tempDir('approval-calls');
const terminals: Terminal[] = [];
afterAll(() => {
  for (const t of terminals) t.close();
  project.cleanup();
});

const EXEC_LINE = '→ exec_command {"command":"echo ran > first.txt"}';
const WRITE_LINE = '→ write_file {"path":"second.txt","content":"x"}';
const EXEC_QUESTION = '? allow exec_command (write)? [y/N, a = always in this session]';
const WRITE_QUESTION = '? allow write_file (write)? [y/N, a = always in this session]';

const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'two-calls' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }],
  scripts: {
    'two-calls': {
      replies: [
        {
          when: { step: 1 },
          reply: {
            toolCalls: [
              { name: 'exec_command', arguments: { command: 'echo ran > first.txt' } },
              { name: 'write_file', arguments: { path: 'second.txt', content: 'x' } },
            ],
          },
        },
        { reply: { text: 'Both asked about.' } },
      ],
    },
  },
});

/** The parent's step runs a subagent (whose step has two calls) and a command of its own. */
const subagentConfig = writeProject(join(project.dir, 'subagent-project'), {
  defaults: { provider: 'scripted', model: 'nested' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }, { name: 'subagents' }],
  scripts: {
    nested: {
      replies: [
        {
          when: { userIncludes: 'child task', step: 1 },
          reply: {
            toolCalls: [
              { name: 'exec_command', arguments: { command: 'echo child > child.txt' } },
              { name: 'write_file', arguments: { path: 'child2.txt', content: 'x' } },
            ],
          },
        },
        { when: { userIncludes: 'child task' }, reply: { text: 'Child done.' } },
        {
          when: { step: 1 },
          reply: {
            toolCalls: [
              { name: 'run_subagent', arguments: { prompt: 'child task' } },
              { name: 'exec_command', arguments: { command: 'echo parent > parent.txt' } },
            ],
          },
        },
        { reply: { text: 'Parent done.' } },
      ],
    },
  },
});

/** The screen's lines, trailing blanks cut. */
function linesOf(screen: string): string[] {
  return screen.split('\n').map((line) => line.trimEnd());
}

/** The index of the one line that contains `text` (fails when none or several do). */
function lineWith(lines: readonly string[], text: string): number {
  const found = lines.flatMap((line, index) => (line.includes(text) ? [index] : []));
  expect(found, `one line with ${JSON.stringify(text)} in:\n${lines.join('\n')}`).toHaveLength(1);
  return found[0]!;
}

/**
 * Answers y to the first question and n to the second, checking that each question stands on its own
 * line right below its own call's line, and that the second call is not shown while the first
 * question waits.
 */
async function answerBoth(t: Terminal, raw: string): Promise<string> {
  let screen = await t.waitFor((s) => s.includes(EXEC_QUESTION), 'the question about exec_command');
  // Give the renderer time to print whatever it would print while the question waits.
  await new Promise((r) => setTimeout(r, 500));
  screen = t.screen();
  let lines = linesOf(screen);
  const execQuestion = lineWith(lines, EXEC_QUESTION);
  expect(lines[execQuestion]).not.toContain('write_file');
  expect(lines[execQuestion]).not.toContain('→');
  expect(lines[execQuestion - 1]).toBe(EXEC_LINE);
  // The cursor waits at the end of the question, not on a line below another call's line.
  expect(lines.slice(execQuestion + 1).join('')).toBe('');
  expect(screen).not.toContain('write_file');
  // The terminal got nothing after the question's prompt but the answer's echo.
  expect(readFileSync(raw, 'utf8')).not.toMatch(/always in this session\] [^\n]*→/);

  t.type('y');
  screen = await t.waitFor((s) => s.includes(WRITE_QUESTION), 'the question about write_file');
  await new Promise((r) => setTimeout(r, 500));
  screen = t.screen();
  lines = linesOf(screen);
  const writeQuestion = lineWith(lines, WRITE_QUESTION);
  expect(lines[writeQuestion]).not.toContain('→');
  expect(lines[writeQuestion - 1]).toBe(WRITE_LINE);
  // In order: the first call, its question answered y, its decision, then the second call and its question.
  const first = lineWith(lines, EXEC_LINE);
  expect(lines.slice(first, writeQuestion + 1)).toEqual([EXEC_LINE, `${EXEC_QUESTION} y`, '  ✓ allowed by you', WRITE_LINE, `${WRITE_QUESTION}`]);
  t.type('n');
  return screen;
}

/** Each answer went to the call its question named: exec_command ran, write_file did not. */
function expectAnswersApplied(home: string, workspace: string): void {
  expect(readFileSync(join(workspace, 'first.txt'), 'utf8')).toBe('ran\n');
  expect(existsSync(join(workspace, 'second.txt'))).toBe(false);
  const events = readEvents(join(home, 'sessions', journals(home)[0]!));
  const names = new Map(events.filter((e) => e.type === 'tool/call').map((e) => [e.data.callId, e.data.name]));
  expect(events.filter((e) => e.type === 'approval/decided').map((e) => [names.get(e.data.callId), e.data.decision, e.data.decidedBy, e.data.reason])).toEqual([
    ['exec_command', 'allow', 'user', undefined],
    ['write_file', 'deny', 'user', 'the user said no'],
  ]);
}

/** Starts `command` in a terminal that records its raw output to a file; returns both. */
async function terminalFor(name: string, command: string, home: string): Promise<{ t: Terminal; raw: string }> {
  const raw = join(project.dir, `${name}.out`);
  const t = new Terminal(`sh -c "read go; exec ${command}"; echo "EXITED:$?"; sleep 120`, cleanEnv({ HARNESS_HOME: home, TERM: 'xterm-256color' }));
  terminals.push(t);
  t.record(raw);
  while (!existsSync(raw)) await new Promise((r) => setTimeout(r, 50));
  t.keys('Enter');
  return { t, raw };
}

describe.skipIf(!hasTmux && !process.env.CI)('approval questions for a step of several tool calls, in a real terminal', { timeout: 240_000 }, () => {
  it('harness run (the default read-only policy): each question on its own line after its own call, each answer applied to it', async () => {
    expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
    const home = join(project.dir, 'home-run');
    const workspace = join(project.dir, 'ws-run');
    mkdirSync(workspace, { recursive: true });
    const { t, raw } = await terminalFor('run', `'${process.execPath}' '${bin}' run --config '${config}' --cwd '${workspace}' 'do it'`, home);
    await answerBoth(t, raw);
    const screen = await t.waitFor((s) => s.includes('EXITED:'), 'the run to end');
    expect(screen).toContain('EXITED:0');
    expect(screen).toContain('✗ denied (user: the user said no)');
    expect(screen).toContain('Both asked about.');
    expectAnswersApplied(home, workspace);
  });

  it('harness chat: the same', async () => {
    const home = join(project.dir, 'home-chat');
    const workspace = join(project.dir, 'ws-chat');
    mkdirSync(workspace, { recursive: true });
    const { t, raw } = await terminalFor('chat', `'${process.execPath}' '${bin}' chat --config '${config}' --cwd '${workspace}'`, home);
    await t.waitFor((s) => s.includes('› '), 'the prompt');
    t.type('do it');
    await answerBoth(t, raw);
    await t.waitFor((s) => s.includes('Both asked about.') && s.trimEnd().endsWith('›'), 'the reply');
    t.keys('C-d');
    const screen = await t.waitFor((s) => s.includes('EXITED:'), 'the chat to quit');
    expect(screen).toContain('EXITED:0');
    expect(screen).toContain('✗ denied (user: the user said no)');
    expectAnswersApplied(home, workspace);
  });

  it("harness run with a subagent: the child's questions are asked below its own calls' lines, after the parent's", async () => {
    const home = join(project.dir, 'home-subagent');
    const workspace = join(project.dir, 'ws-subagent');
    mkdirSync(workspace, { recursive: true });
    const { t } = await terminalFor('subagent', `'${process.execPath}' '${bin}' run --config '${subagentConfig}' --cwd '${workspace}' 'do it'`, home);
    let screen = await t.waitFor((s) => s.includes(EXEC_QUESTION), "the question about the parent's exec_command");
    let lines = linesOf(screen);
    expect(lines[lineWith(lines, EXEC_QUESTION) - 1]).toBe('→ exec_command {"command":"echo parent > parent.txt"}');
    t.type('y');
    screen = await t.waitFor((s) => s.includes(`${EXEC_QUESTION} y`) && s.split(EXEC_QUESTION).length === 3, "the question about the child's exec_command");
    lines = linesOf(screen);
    const childQuestion = lines.findLastIndex((line) => line.startsWith(EXEC_QUESTION));
    expect(lines[childQuestion - 1]).toBe('  [sub1] → exec_command {"command":"echo child > child.txt"}');
    expect(lines.slice(childQuestion).join('')).toBe(EXEC_QUESTION);
    t.type('y');
    screen = await t.waitFor((s) => s.includes(WRITE_QUESTION), "the question about the child's write_file");
    lines = linesOf(screen);
    expect(lines[lineWith(lines, WRITE_QUESTION) - 1]).toBe('  [sub1] → write_file {"path":"child2.txt","content":"x"}');
    t.type('n');
    screen = await t.waitFor((s) => s.includes('EXITED:'), 'the run to end');
    expect(screen).toContain('EXITED:0');
    expect(screen).toContain('[sub1] ✗ denied (user: the user said no)');
    expect(screen).toContain('Parent done.');
    expect(readFileSync(join(workspace, 'parent.txt'), 'utf8')).toBe('parent\n');
    expect(readFileSync(join(workspace, 'child.txt'), 'utf8')).toBe('child\n');
    expect(existsSync(join(workspace, 'child2.txt'))).toBe(false);
  });
});
