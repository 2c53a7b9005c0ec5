/**
 * The approval prompt in a real terminal (tmux): before y/n the person sees everything the call would
 * do — a long command as its start and end with "… N characters not shown …" and `v` to view it all;
 * only y/yes allows, and the journal says what the answer really was. A turn cancelled by Ctrl-C at
 * the prompt re-runs the same as a cassette.
 *
 * Needs tmux (`apt-get install tmux`; .ci/run installs it). Without tmux the test is skipped locally
 * and fails on CI.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, cleanEnv, filesOf, harness, readEvents, tempDir, writeProject } from './support.ts';
import { count, hasTmux, Terminal } from './terminal.ts';

const project = tempDir('approval');
let terminal: Terminal | undefined;
afterAll(() => {
  terminal?.close();
  project.cleanup();
});

const filler = 'x'.repeat(5000);
/** Harmless at the start, not at the end: the part a truncated preview would hide. */
const longCommand = `echo '\x1b]0;PWNED\x07' harmless-${filler}; echo DANGEROUS > x`;
const note = `# Notes\n\n${'A line of notes that goes on for a while. '.repeat(5)}\n`;

const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'risky' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }],
  scripts: {
    risky: {
      replies: [
        { when: { step: 1 }, reply: { text: 'First, a command.', toolCalls: [{ name: 'exec_command', arguments: { command: longCommand } }] } },
        { when: { step: 2 }, reply: { text: 'Then a note.', toolCalls: [{ name: 'write_file', arguments: { path: 'notes.md', content: note } }] } },
        { when: { step: 3 }, reply: { text: 'A small file.', toolCalls: [{ name: 'write_file', arguments: { path: 'a.md', content: 'hi' } }] } },
        { when: { step: 4 }, reply: { text: 'One more command.', toolCalls: [{ name: 'exec_command', arguments: { command: 'echo last' } }] } },
        { reply: { text: 'Done.' } },
      ],
    },
  },
});

describe.skipIf(!hasTmux && !process.env.CI)('the approval prompt in a real terminal', { timeout: 240_000 }, () => {
  it('shows the whole call before y/n, journals each answer as given, and the Ctrl-C turn re-runs as a cassette', async () => {
    expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
    const home = join(project.dir, 'home');
    const workspace = join(project.dir, 'ws');
    mkdirSync(workspace, { recursive: true });
    terminal = new Terminal(
      `'${process.execPath}' '${bin}' run 'Do the risky things.' --approve always-ask --config '${config}' --cwd '${workspace}'; echo "EXITED:$?"; sleep 120`,
      cleanEnv({ HARNESS_HOME: home, TERM: 'xterm-256color' }),
    );
    const t = terminal;

    // 1. A long command: its start and its end are shown, with how much is not, and `v` is offered.
    let screen = await t.waitFor((s) => s.includes('? allow exec_command (write)? [y/N, a = always in this session, v = view all]'), 'the first question');
    expect(screen).toContain(`exec_command will run (${longCommand.length.toLocaleString('en-US')} characters; the start and the end):`);
    expect(screen).toMatch(/… [\d,]+ characters not shown — answer v to see everything …/);
    expect(screen).toContain('; echo DANGEROUS > x');
    expect(screen).toContain("echo '␛]0;PWNED␇' harmless-"); // control characters shown, not obeyed
    expect(screen).not.toContain(filler);
    t.type('v');
    screen = await t.waitFor((s) => s.includes('? allow exec_command (write)? [y/N, a = always in this session] '), 'the question after viewing everything');
    expect(screen).toContain(`echo '␛]0;PWNED␇' harmless-${filler}; echo DANGEROUS > x`);
    t.type('maybe');
    screen = await t.waitFor((s) => s.includes('? allow write_file (write)? [y/N, a = always in this session]'), 'the second question');
    expect(screen).toContain('✗ denied (user: unrecognised answer "maybe" taken as no)');

    // 2. Arguments the one-line preview cuts are shown in full, as JSON; `n` is a no.
    expect(screen).toContain('write_file arguments (');
    expect(screen).toContain(JSON.stringify(note));
    t.type('n');
    screen = await t.waitFor(
      (s) => s.includes('? allow write_file (write)? [y/N, a = always in this session]') && s.includes('→ write_file {"path":"a.md","content":"hi"}') && count(s, '? allow write_file') === 2,
      'the third question',
    );
    expect(screen).toContain('✗ denied (user: the user said no)');

    // 3. Enter alone is the default: no.
    t.keys('Enter');
    await t.waitFor((s) => s.includes('? allow exec_command (write)? [y/N, a = always in this session]') && s.includes('→ exec_command {"command":"echo last"}'), 'the fourth question');

    // 4. Ctrl-C at the question: no, and the turn is cancelled.
    t.keys('C-c');
    screen = await t.waitFor((s) => s.includes('EXITED:'), 'the run to end');
    expect(screen).toContain('EXITED:130');
    expect(screen).toContain('✗ denied (user: no answer (Enter; the default is no))');
    expect(screen).toContain('✗ denied (user: no answer (Ctrl-C))');
    expect(existsSync(join(workspace, 'x'))).toBe(false);

    const journal = join(home, 'sessions', filesOf(join(home, 'sessions')).find((name) => name.endsWith('.jsonl'))!);
    const events = readEvents(journal);
    expect(events.filter((e) => e.type === 'approval/decided').map((e) => [e.data.decision, e.data.decidedBy, e.data.reason])).toEqual([
      ['deny', 'user', 'unrecognised answer "maybe" taken as no'],
      ['deny', 'user', 'the user said no'],
      ['deny', 'user', 'no answer (Enter; the default is no)'],
      ['deny', 'user', 'no answer (Ctrl-C)'],
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } });

    // The turn cancelled at the prompt re-runs the same offline.
    const cassette = await harness(['replay', journal, '--cassette', '--config', config], { home });
    expect(cassette.stdout).toContain('✓ turn 1 aborted · 4 model calls');
    expect(cassette.stdout).toMatch(/^same every request, reply, tool result, approval and turn end matches the recording/m);
    expect(cassette.code).toBe(0);
  });
});
