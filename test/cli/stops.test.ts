/**
 * Ends that come from outside the command: SIGTERM and SIGHUP stop a running turn like the first
 * Ctrl-C (the close-out kills `exec_command`'s process group, the turn is journaled `aborted`, the
 * journal closed and its lock released) and exit 128 + the signal; output piped into a reader that
 * went away (`| head`) is dropped and the command exits 0 (a run says on stderr that its turn was
 * aborted).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { filesOf, harness, projectRoot, readEvents, run, cleanEnv, bin, start, tempDir, writeProject, writeSlowCloseProject } from './support.ts';

const project = tempDir('stops');
const children: { kill: (signal: NodeJS.Signals) => boolean }[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  project.cleanup();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A model that runs one long command, then answers. */
const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'sleeper' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }],
  scripts: {
    sleeper: {
      replies: [{ when: { step: 1 }, reply: { text: 'Running it.', toolCalls: [{ name: 'exec_command', arguments: { command: 'sleep 8; echo done > slept.txt' } }] } }, { reply: { text: 'Done.' } }],
    },
  },
});

/** The one journal of a data directory, and its folder's files. */
function journalOf(home: string): { path: string; files: string[] } {
  const files = filesOf(join(home, 'sessions'));
  const journals = files.filter((name) => name.endsWith('.jsonl'));
  expect(journals).toHaveLength(1);
  return { path: join(home, 'sessions', journals[0]!), files };
}

describe('SIGTERM and SIGHUP', { timeout: 120_000 }, () => {
  it('run: SIGTERM during exec_command kills the command, closes the turn as aborted, releases the lock, exits 143', async () => {
    const home = join(project.dir, 'home-run');
    const workspace = join(project.dir, 'ws-run');
    mkdirSync(workspace, { recursive: true });
    const h = start(['run', 'Sleep, please.', '--config', config, '--cwd', workspace, '--approve', 'allow-all'], { home });
    children.push(h.child);
    await h.waitFor((o) => o.includes('→ exec_command'), 'the tool call');
    const commandStartedBy = Date.now();
    await sleep(1500);
    h.child.kill('SIGTERM');
    expect(await h.exited).toBe(143);
    expect(h.err()).toContain('cancelled: the turn was aborted (SIGTERM)');
    expect(h.out()).toContain('SIGTERM: cancelling the turn…');
    const { path, files } = journalOf(home);
    expect(files.filter((name) => name.endsWith('.lock'))).toEqual([]);
    const events = readEvents(path);
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'aborted' } });
    expect(events.find((e) => e.type === 'tool/result')!.data.code).toBe('ABORTED');
    // The journal is whole: it verifies.
    const verify = await harness(['replay', path, '--verify', '--config', config], { home });
    expect(verify.code).toBe(0);
    // The command's process group is gone: its `echo done > slept.txt` never runs.
    await sleep(Math.max(0, commandStartedBy + 9_500 - Date.now()));
    expect(existsSync(join(workspace, 'slept.txt'))).toBe(false);
  });

  it('chat: SIGTERM during a turn aborts it and quits (143); SIGHUP at the prompt quits (129); no lock is left', async () => {
    const workspace = join(project.dir, 'ws-chat');
    mkdirSync(workspace, { recursive: true });
    // SIGTERM while exec_command runs.
    const homeTerm = join(project.dir, 'home-chat-term');
    const term = start(['chat', '--config', config, '--cwd', workspace, '--approve', 'allow-all'], { home: homeTerm });
    children.push(term.child);
    term.child.stdin.write('Sleep, please.\n');
    await term.waitFor((o) => o.includes('→ exec_command'), 'the tool call');
    await sleep(1000);
    term.child.kill('SIGTERM');
    expect(await term.exited).toBe(143);
    const terminated = journalOf(homeTerm);
    expect(terminated.files.filter((name) => name.endsWith('.lock'))).toEqual([]);
    expect(readEvents(terminated.path).at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } });
    expect(term.out()).toContain('cancelled — the turn was aborted (SIGTERM)');

    // SIGHUP at the prompt, after a turn that completed (a session resumed in a chat holds its lock).
    const homeHup = join(project.dir, 'home-chat-hup');
    const first = await harness(['run', 'Sleep, please.', '--config', config, '--cwd', workspace, '--approve', 'deny-all'], { home: homeHup });
    expect(first.code).toBe(0);
    const { path } = journalOf(homeHup);
    const hup = start(['chat', '--config', config, '--resume', path], { home: homeHup });
    children.push(hup.child);
    await hup.waitFor((o) => o.includes('› '), 'the prompt');
    expect(existsSync(`${path}.lock`)).toBe(true);
    hup.child.kill('SIGHUP');
    expect(await hup.exited).toBe(129);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });
});

describe('a second SIGTERM or SIGHUP (a closed terminal sends two)', { timeout: 120_000 }, () => {
  const slowConfig = writeSlowCloseProject(join(project.dir, 'project-slow-close'));

  /** The turn was journaled aborted before the exit: its call's result, its end, no lock; it verifies. */
  async function expectClosed(home: string): Promise<void> {
    const { path, files } = journalOf(home);
    expect(files.filter((name) => name.endsWith('.lock'))).toEqual([]);
    const events = readEvents(path);
    expect(events.find((e) => e.type === 'tool/result')?.data.code).toBe('ABORTED');
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'aborted' } });
    const verify = await harness(['replay', path, '--verify', '--config', slowConfig], { home });
    expect(verify.stdout + verify.stderr).not.toContain('never ended');
    expect(verify.code).toBe(0);
  }

  it('run: waits for the aborted turn to be journaled, then exits 129 (before: cut off at the tool output)', async () => {
    const home = join(project.dir, 'home-run-twice');
    const workspace = join(project.dir, 'ws-run-twice');
    mkdirSync(workspace, { recursive: true });
    const h = start(['run', 'Sleep, please.', '--config', slowConfig, '--cwd', workspace, '--approve', 'allow-all'], { home });
    children.push(h.child);
    await h.waitFor((o) => o.includes('started'), 'the command output');
    h.child.kill('SIGHUP');
    await sleep(300);
    h.child.kill('SIGHUP');
    expect(await h.exited).toBe(129);
    await expectClosed(home);
  });

  it('chat: the same, exit 143', async () => {
    const home = join(project.dir, 'home-chat-twice');
    const workspace = join(project.dir, 'ws-chat-twice');
    mkdirSync(workspace, { recursive: true });
    const h = start(['chat', '--config', slowConfig, '--cwd', workspace, '--approve', 'allow-all'], { home });
    children.push(h.child);
    h.child.stdin.write('Sleep, please.\n');
    await h.waitFor((o) => o.includes('started'), 'the command output');
    h.child.kill('SIGTERM');
    await sleep(300);
    h.child.kill('SIGTERM');
    expect(await h.exited).toBe(143);
    await expectClosed(home);
  });
});

describe('a reader that goes away (EPIPE)', { timeout: 120_000 }, () => {
  it('sessions, replay, replay --json and run piped into a closed pipe exit 0; only run says a word (its turn was aborted)', async () => {
    const home = join(project.dir, 'home-pipe');
    const demo = join(projectRoot, 'cookbook/demo-workspace');
    const env = cleanEnv({ HARNESS_HOME: home });
    // `| true`: the reader is gone before the harness writes anything.
    const piped = (args: string) => run('bash', ['-c', `'${process.execPath}' '${bin}' ${args} | true; echo "exit=\${PIPESTATUS[0]}"`], { env });
    const runPiped = await piped(`run 'What is in this workspace?' --config '${config}' --cwd '${demo}' --approve deny-all`);
    // The turn was aborted (nothing read it): one line on stderr says so, the rest is quiet.
    expect(runPiped.stderr).toMatch(/^stopped: the output pipe was closed, so the turn was aborted \(journaled; resume with .* run --resume [0-9a-f-]{36} "<prompt>"\)\n$/);
    expect(runPiped.stdout).toBe('exit=0\n');
    // The run's journal is closed: its turn ended, its lock is gone.
    const { path, files } = journalOf(home);
    expect(files.filter((name) => name.endsWith('.lock'))).toEqual([]);
    expect(readEvents(path).at(-1)).toMatchObject({ type: 'turn/end' });
    const id = path.slice(path.lastIndexOf('/') + 1, -'.jsonl'.length);
    const results = await Promise.all([piped(`sessions --config '${config}'`), piped(`replay ${id} --config '${config}'`), piped(`replay ${id} --json --config '${config}'`)]);
    for (const result of results) {
      expect(result.stderr).toBe('');
      expect(result.stdout).toBe('exit=0\n');
    }
  });

  it('run | head -2: the turn is aborted at the next write, says so on stderr and exits 0, as the README says', async () => {
    const home = join(project.dir, 'home-head');
    const workspace = join(project.dir, 'ws-head');
    mkdirSync(workspace, { recursive: true });
    const env = cleanEnv({ HARNESS_HOME: home });
    const result = await run(
      'bash',
      ['-c', `'${process.execPath}' '${bin}' run 'Sleep, please.' --config '${config}' --cwd '${workspace}' --approve allow-all | head -2; echo "exit=\${PIPESTATUS[0]}"`],
      { env },
    );
    expect(result.stdout).toMatch(/exit=0\n$/);
    expect(result.stdout.split('\n')).toHaveLength(4); // head's two lines, the exit line, the last newline
    // Before: nothing at all on stderr, though the turn stopped part-way.
    expect(result.stderr).toContain('stopped: the output pipe was closed, so the turn was aborted');
    const { path } = journalOf(home);
    const id = path.slice(path.lastIndexOf('/') + 1, -'.jsonl'.length);
    expect(result.stderr).toContain(`run --resume ${id} "<prompt>"`);
    const end = readEvents(path).at(-1)!;
    expect(end).toMatchObject({ type: 'turn/end', data: { reason: 'aborted' } });
    expect(JSON.stringify(end.data)).toContain('the output pipe was closed');
    const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    expect(readme).toContain('`harness run "…" | head -2` aborts the running turn');
  });
});
