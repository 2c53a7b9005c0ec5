/**
 * A terminal that reports 0 columns and 0 rows (`stty cols 0 rows 0`, `script` without a size): the
 * spinner once counted a line as ⌈width / 0⌉ = Infinity rows and erased upwards forever, in one
 * synchronous loop, so the turn never finished and SIGTERM (whose handler needs the event loop) was
 * never honoured. An unknown width is now taken as 80 columns (cli/env.ts): the turn completes, and
 * SIGTERM mid-turn exits 143.
 *
 * Needs tmux (`apt-get install tmux`; .ci/run installs it). Without tmux the test is skipped locally
 * and fails on CI.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, cleanEnv, journals, projectRoot, readEvents, tempDir } from './support.ts';
import { count, hasTmux, Terminal } from './terminal.ts';

const project = tempDir('zero-width');
const terminals: Terminal[] = [];
const pids: number[] = [];
afterAll(() => {
  for (const t of terminals) t.close();
  // A harness stuck in the old loop ignores SIGTERM and SIGHUP: only SIGKILL ends it.
  for (const pid of pids) spawnSync('kill', ['-9', String(pid)], { stdio: 'ignore' });
  project.cleanup();
});

function writeProject(paceMs: number): { config: string; workspace: string } {
  const dir = project.dir;
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const plugin = (name: string) => JSON.stringify(join(projectRoot, 'plugins', name, 'index.ts'));
  const config = join(dir, `harness-${paceMs}.config.ts`);
  writeFileSync(
    config,
    `export default {
  defaults: { provider: 'scripted', model: 'scripted-default' },
  plugins: [
    { module: ${plugin('llm-scripted')}, config: { paceMs: ${paceMs}, fragmentChars: 4 } },
    { module: ${plugin('tools-workspace')} },
  ],
};
`,
  );
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, 'README.md'), '# Zero width\n\nA workspace for the zero-width test.\n');
  return { config, workspace };
}

/**
 * `harness run` in a terminal whose size is 0×0, started by an Enter once its output is recorded to
 * `output`; the screen shows `PID:<n>` first and `EXITED:<code>` at the end.
 */
function start(config: string, workspace: string, home: string, output: string): { t: Terminal; pid: () => Promise<number> } {
  const inner = `echo PID:\\$\\$; read go; stty cols 0 rows 0; exec '${process.execPath}' '${bin}' run --config '${config}' --cwd '${workspace}' 'What is in this workspace?'`;
  const t = new Terminal(`sh -c "${inner}"; echo "EXITED:$?"; sleep 120`, cleanEnv({ HARNESS_HOME: home, TERM: 'xterm-256color' }));
  terminals.push(t);
  return {
    t,
    pid: async () => {
      const screen = await t.waitFor((s) => /PID:\d+/.test(s), 'the pid');
      const pid = Number(/PID:(\d+)/.exec(screen)![1]);
      pids.push(pid);
      t.record(output);
      await new Promise((r) => setTimeout(r, 200));
      while (!existsSync(output)) await new Promise((r) => setTimeout(r, 50));
      t.keys('Enter');
      return pid;
    },
  };
}

describe.skipIf(!hasTmux && !process.env.CI)('harness run in a terminal of 0 columns', { timeout: 240_000 }, () => {
  it('completes the turn', async () => {
    expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
    const { config, workspace } = writeProject(5);
    const home = join(project.dir, 'home-complete');
    const output = join(project.dir, 'complete.out');
    const { t, pid } = start(config, workspace, home, output);
    await pid();
    const screen = await t.waitFor((s) => s.includes('EXITED:'), 'the run to end', 90_000);
    expect(screen).toContain('EXITED:0');
    expect(screen).toContain('I could not list the workspace');
    expect(screen).toContain('tokens  this turn:');
    // The spinner is one line at 80 columns: it erases that line, never a line above it.
    const written = readFileSync(output, 'utf8');
    expect(written).toContain('Let me look at the workspace first.');
    expect(written).toContain('thinking…'); // the spinner was up
    expect(count(written, '\x1b[1A')).toBe(0);
    const events = readEvents(join(home, 'sessions', journals(home)[0]!));
    expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)).toEqual(['completed']);
  });

  it('exits 143 on SIGTERM mid-turn', async () => {
    const { config, workspace } = writeProject(400);
    const home = join(project.dir, 'home-sigterm');
    const { t, pid } = start(config, workspace, home, join(project.dir, 'sigterm.out'));
    const id = await pid();
    // The spinner is up as soon as the request is sent (the journal has the request's header).
    await t.waitFor(() => {
      const files = journals(home);
      try {
        return files.length > 0 && readEvents(join(home, 'sessions', files[0]!)).some((e) => e.type === 'request/header');
      } catch {
        return false; // a line being written
      }
    }, 'the first request');
    await new Promise((r) => setTimeout(r, 500));
    process.kill(id, 'SIGTERM');
    const screen = await t.waitFor((s) => s.includes('EXITED:'), 'the run to end on SIGTERM', 60_000);
    expect(screen).toContain('EXITED:143');
  });
});
