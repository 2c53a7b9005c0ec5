/**
 * `harness chat` in a real terminal (tmux): a prompt streams an answer; Ctrl-C mid-answer cancels the
 * turn and the REPL stays usable (the next prompt is answered); a second Ctrl-C quits. An unknown
 * `/word` is an error, a bracketed paste of three lines is one prompt, Alt-Enter enters a newline,
 * "always" at an approval question allows that tool for the rest of the session (journaled as
 * such), and `/model` switches the model of the next request.
 *
 * Needs tmux (`apt-get install tmux`; .ci/run installs it). Without tmux the test is skipped locally
 * and fails on CI.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, cleanEnv, harness, journals, projectRoot, readEvents, tempDir, writeProject as writeSpecProject } from './support.ts';
import { count, hasTmux, Terminal } from './terminal.ts';

const project = tempDir('chat');
let terminal: Terminal | undefined;
afterAll(() => {
  terminal?.close();
  project.cleanup();
});

/** A project with its own config: the scripted model paced slowly enough to interrupt it. */
function writeProject(): { config: string; home: string; workspace: string } {
  const dir = project.dir;
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const plugin = (name: string) => JSON.stringify(join(projectRoot, 'plugins', name, 'index.ts'));
  writeFileSync(
    join(dir, 'harness.config.ts'),
    `export default {
  defaults: { provider: 'scripted', model: 'scripted-default' },
  plugins: [
    { module: ${plugin('llm-scripted')}, config: { paceMs: 40, fragmentChars: 4 } },
    { module: ${plugin('tools-workspace')} },
    { module: ${plugin('approvals')} },
    { module: ${plugin('token-meter')} },
  ],
};
`,
  );
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, 'README.md'), '# Chat test\n\nA workspace for the chat test.\n');
  return { config: join(dir, 'harness.config.ts'), home: join(dir, 'home'), workspace };
}

describe.skipIf(!hasTmux && !process.env.CI)('harness chat in a real terminal', { timeout: 240_000 }, () => {
  it('streams, cancels a turn with Ctrl-C and stays usable, quits on a second Ctrl-C', async () => {
    expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
    const { config, home, workspace } = writeProject();
    const env = cleanEnv({ HARNESS_HOME: home, TERM: 'xterm-256color' });
    terminal = new Terminal(`'${process.execPath}' '${bin}' chat --config '${config}' --cwd '${workspace}'; echo "EXITED:$?"; sleep 120`, env);
    const t = terminal;
    await t.waitFor((s) => s.includes('harness chat · new session (its journal starts with the first prompt)') && s.includes('› '), 'the banner and the prompt');

    // 1. A prompt streams an answer: seen part-way, then whole.
    t.type('What is in this workspace?');
    const partial = await t.waitFor((s) => s.includes('Let me look') && !s.includes('Here is what I found'), 'the first reply streaming');
    expect(partial).toContain('The user asked: "What is in this workspace?"');
    let screen = await t.waitFor((s) => s.includes('Here is what I found') && /tokens {2}.* in · /.test(s), 'the first reply to finish');
    expect(screen).toContain('→ list_dir {"path":"."}');
    expect(screen).toContain('→ read_file {"path":"README.md"}');
    expect(screen).toContain('> # Chat test');

    // 2. Ctrl-C mid-answer cancels the turn; the REPL stays.
    await t.waitFor((s) => s.trimEnd().endsWith('›'), 'the prompt after the first turn');
    t.type('Tell me more.');
    await t.waitFor((s) => s.includes('The user asked: "Tell me more."'), 'the second reply streaming');
    t.keys('C-c');
    screen = await t.waitFor((s) => s.includes('cancelled — the turn was aborted; the session goes on'), 'the cancelled turn');
    expect(screen).toContain('^C cancelling the turn (Ctrl-C again to quit)');
    expect(count(screen, 'Here is what I found')).toBe(1);
    await t.waitFor((s) => s.trimEnd().endsWith('›'), 'the prompt after the cancelled turn');

    // 3. The next prompt is answered.
    t.type('Are you still there?');
    screen = await t.waitFor((s) => count(s, 'Here is what I found') === 2 && s.trimEnd().endsWith('›'), 'the third reply');
    expect(screen).toContain('The user asked: "Are you still there?"');

    // 4. Ctrl-C at the prompt arms, the second one quits.
    t.keys('C-c');
    await t.waitFor((s) => s.includes('(Ctrl-C again to quit, or type a prompt)'), 'the first Ctrl-C at the prompt');
    t.keys('C-c');
    screen = await t.waitFor((s) => s.includes('EXITED:'), 'the REPL to quit');
    expect(screen).toContain('EXITED:0');
    expect(screen).toMatch(/replay {2}.* replay [0-9a-f-]{36}/);

    // One journal, three turns: completed, aborted, completed — and it verifies.
    const files = journals(home);
    expect(files).toHaveLength(1);
    const events = readEvents(join(home, 'sessions', files[0]!));
    expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)).toEqual(['completed', 'aborted', 'completed']);
    const verify = await harness(['replay', join(home, 'sessions', files[0]!), '--verify', '--config', config], { home });
    expect(verify.code).toBe(0);
    terminal.close();
  });

  it("always-ask prompts y/n in the terminal, and the answers are journaled as the user's", async () => {
    const { config, workspace } = writeProject();
    const home = join(project.dir, 'home-ask');
    terminal = new Terminal(
      `'${process.execPath}' '${bin}' chat --approve always-ask --config '${config}' --cwd '${workspace}'; echo "EXITED:$?"; sleep 120`,
      cleanEnv({ HARNESS_HOME: home, TERM: 'xterm-256color' }),
    );
    const t = terminal;
    await t.waitFor((s) => s.includes('approvals always-ask') && s.includes('› '), 'the banner');
    t.type('What is in this workspace?');
    await t.waitFor((s) => s.includes('→ list_dir {"path":"."}') && s.includes('? allow list_dir (read)? [y/N, a = always in this session]'), 'the first question');
    t.type('y');
    await t.waitFor((s) => s.includes('? allow read_file (read)? [y/N, a = always in this session]'), 'the second question');
    t.type('n');
    let screen = await t.waitFor((s) => s.includes('but I could not read README.md') && s.trimEnd().endsWith('›'), 'the reply');
    expect(screen).toContain('✓ allowed by you');
    expect(screen).toContain('✗ denied (user: the user said no)');
    // Ctrl-C at the question: a no that says so, and the turn is cancelled; the REPL stays.
    t.type('Look again.');
    await t.waitFor((s) => count(s, '? allow list_dir (read)? [y/N, a = always in this session]') === 2, 'the question of the second turn');
    t.keys('C-c');
    screen = await t.waitFor((s) => s.includes('cancelled — the turn was aborted; the session goes on') && s.trimEnd().endsWith('›'), 'the cancelled turn');
    expect(screen).toContain('✗ denied (user: no answer (Ctrl-C))');
    t.keys('C-d');
    await t.waitFor((s) => s.includes('EXITED:0'), 'Ctrl-D to quit');
    const events = readEvents(join(home, 'sessions', journals(home)[0]!));
    expect(events.filter((e) => e.type === 'approval/decided').map((e) => [e.data.decision, e.data.decidedBy, e.data.reason])).toEqual([
      ['allow', 'user', undefined],
      ['deny', 'user', 'the user said no'],
      ['deny', 'user', 'no answer (Ctrl-C)'],
    ]);
    expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)).toEqual(['completed', 'aborted']);
  });
});

describe.skipIf(!hasTmux && !process.env.CI)('chat input and commands in a real terminal', { timeout: 240_000 }, () => {
  it('an unknown /word is an error; a pasted block is one prompt; Alt-Enter is a newline; "always" holds for the session; /model switches', async () => {
    expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
    const config = writeSpecProject(join(project.dir, 'input-project'), {
      defaults: { provider: 'scripted', model: 'scripted-default' },
      plugins: [{ name: 'llm-scripted', config: { paceMs: 5, fragmentChars: 8 } }, { name: 'tools-workspace' }, { name: 'approvals' }],
      scripts: { second: { replies: [{ reply: { text: 'Answer of the second model.' } }] } },
    });
    const { workspace } = writeProject();
    const home = join(project.dir, 'home-input');
    terminal = new Terminal(
      `'${process.execPath}' '${bin}' chat --approve always-ask --config '${config}' --cwd '${workspace}'; echo "EXITED:$?"; sleep 120`,
      cleanEnv({ HARNESS_HOME: home, TERM: 'xterm-256color' }),
    );
    const t = terminal;
    await t.waitFor((s) => s.includes('approvals always-ask') && s.includes('› '), 'the banner');

    // 1. An unknown /word: an error listing the commands; nothing reaches the model (no session yet).
    t.type('/nope what');
    await t.waitFor((s) => s.includes('error UNKNOWN_COMMAND: /nope is not a chat command (nothing was sent to the model). Commands: /help'), 'the unknown command');
    expect(journals(home)).toEqual([]);

    // 2. A bracketed paste of three lines: one prompt, shown with ␤ where the lines break, sent by Enter.
    t.paste('first line\nsecond line\nthird line');
    await t.waitFor((s) => s.includes('› first line␤second line␤third line'), 'the pasted block on the prompt line');
    t.keys('Enter');
    // 3. "always" for list_dir; a plain yes for read_file.
    await t.waitFor((s) => s.includes('? allow list_dir (read)? [y/N, a = always in this session]'), 'the list_dir question');
    t.type('a');
    await t.waitFor((s) => s.includes('? allow read_file (read)? [y/N, a = always in this session]'), 'the read_file question');
    t.type('y');
    let screen = await t.waitFor((s) => s.includes('Here is what I found') && s.trimEnd().endsWith('›'), 'the first reply');
    expect(screen).toContain('✓ allowed by you (the user said always: list_dir is allowed for the rest of the session)');

    // 4. Alt-Enter enters a newline; list_dir is not asked again, read_file is.
    t.type('Again', false);
    t.keys('M-Enter');
    t.type('one more line', false);
    await t.waitFor((s) => s.includes('› Again␤one more line'), 'the two-line prompt being edited');
    t.keys('Enter');
    screen = await t.waitFor((s) => count(s, '? allow read_file (read)? [y/N, a = always in this session]') === 2, 'the second read_file question');
    expect(count(screen, '? allow list_dir (read)?')).toBe(1);
    expect(screen).toContain('✓ allowed by you (always: the user said always for list_dir in turn 1)');
    t.type('n');
    await t.waitFor((s) => s.includes('but I could not read README.md') && s.trimEnd().endsWith('›'), 'the second reply');

    // 5. /model: the next request goes to the other model.
    t.type('/model scripted/second');
    await t.waitFor((s) => s.includes('model scripted/second — the next request uses it'), 'the switch');
    t.type('Third.');
    await t.waitFor((s) => s.includes('Answer of the second model.') && s.trimEnd().endsWith('›'), 'the reply of the second model');
    t.type('/exit');
    await t.waitFor((s) => s.includes('EXITED:0'), 'the chat to quit');

    const events = readEvents(join(home, 'sessions', journals(home)[0]!));
    expect(events.filter((e) => e.type === 'user/message').map((e) => e.data.message.content[0].text)).toEqual(['first line\nsecond line\nthird line', 'Again\none more line', 'Third.']);
    const names = new Map(events.filter((e) => e.type === 'tool/call').map((e) => [e.data.callId, e.data.name]));
    expect(events.filter((e) => e.type === 'approval/decided').map((e) => [names.get(e.data.callId), e.data.decision, e.data.decidedBy, e.data.reason])).toEqual([
      ['list_dir', 'allow', 'user', 'the user said always: list_dir is allowed for the rest of the session'],
      ['read_file', 'allow', 'user', undefined],
      ['list_dir', 'allow', 'user', 'always: the user said always for list_dir in turn 1'],
      ['read_file', 'deny', 'user', 'the user said no'],
    ]);
    expect(events.filter((e) => e.type === 'request/header').map((e) => [e.data.header.config.model, e.data.reason])).toEqual([
      ['scripted-default', 'initial'],
      ['second', 'change'],
    ]);
    expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)).toEqual(['completed', 'completed', 'completed']);
    terminal.close();
  });
});

describe.skipIf(!hasTmux && !process.env.CI)('finding a session from chat', { timeout: 300_000 }, () => {
  it("-r with no id picks from a list; -c takes the workspace's latest; -r takes an id prefix; a resumed chat shows its last turns", async () => {
    expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
    const { config } = writeProject();
    const home = join(project.dir, 'home-find');
    const here = join(project.dir, 'here');
    const elsewhere = join(project.dir, 'elsewhere');
    for (const dir of [here, elsewhere]) mkdirSync(dir, { recursive: true });
    // "alpha" in this workspace, then the newer "beta" in another.
    const alpha = await harness(['run', 'alpha question', '--config', config, '--cwd', here], { home });
    expect(alpha.code).toBe(0);
    const beta = await harness(['run', 'beta question', '--config', config, '--cwd', elsewhere], { home });
    expect(beta.code).toBe(0);
    const idOf = (stdout: string) => /^journal \S+\/([^/]+)\.jsonl$/m.exec(stdout)![1]!;
    const [alphaId, betaId] = [idOf(alpha.stdout), idOf(beta.stdout)];
    const chat = `'${process.execPath}' '${bin}' chat --config '${config}'`;
    terminal = new Terminal(
      `cd '${here}' && ${chat} -r; echo "EXITED-1:$?"; ${chat} -c; echo "EXITED-2:$?"; ${chat} -r ${betaId.slice(0, 8)}; echo "EXITED-3:$?"; sleep 120`,
      cleanEnv({ HARNESS_HOME: home, TERM: 'xterm-256color' }),
    );
    const t = terminal;
    // 1. The picker: this workspace's session first, then the other; ↓ Enter takes "beta".
    let screen = await t.waitFor((s) => s.includes('Resume which session?') && s.includes('beta question'), 'the picker');
    expect(screen.indexOf('alpha question')).toBeLessThan(screen.indexOf('beta question'));
    expect(screen).toMatch(/beta question\s+\S*elsewhere\s+\S+ ago\s+1 turn/);
    t.keys('Down');
    t.keys('Enter');
    screen = await t.waitFor((s) => s.includes(`harness chat · session ${betaId}`) && s.trimEnd().endsWith('›'), 'the chosen session');
    // The resumed chat shows the session so far before its prompt.
    expect(screen).toContain('── the session so far (1 turn) ──');
    expect(screen).toContain('user: beta question');
    expect(screen).toContain('turn 1 completed');
    t.type('/exit');
    // 2. -c: the latest session of this workspace (alpha), though beta is newer.
    screen = await t.waitFor((s) => s.includes('EXITED-1:0') && s.includes(`harness chat · session ${alphaId}`) && s.trimEnd().endsWith('›'), '-c to open alpha');
    t.type('/exit');
    // 3. -r with an id prefix.
    await t.waitFor((s) => s.includes('EXITED-2:0') && count(s, `harness chat · session ${betaId}`) === 2 && s.trimEnd().endsWith('›'), 'the prefix to open beta');
    t.type('/exit');
    await t.waitFor((s) => s.includes('EXITED-3:0'), 'the last chat to quit');
    terminal.close();
  });
});
