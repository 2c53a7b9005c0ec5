/**
 * Ctrl-C mid-turn in `harness run` (a real terminal, tmux): the terminal echoes `^C` itself (the
 * input is not in raw mode), so the notice must not add a second one — the trial saw
 * `^C^C cancelling…` for one key. The turn ends cancelled and the run exits 130.
 *
 * Needs tmux (`apt-get install tmux`; .ci/run installs it). Without tmux the test is skipped locally
 * and fails on CI.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, cleanEnv, projectRoot, tempDir } from './support.ts';
import { count, hasTmux, Terminal } from './terminal.ts';

const project = tempDir('run-interrupt');
let terminal: Terminal | undefined;
afterAll(() => {
  terminal?.close();
  project.cleanup();
});

describe.skipIf(!hasTmux && !process.env.CI)('harness run and Ctrl-C in a real terminal', { timeout: 240_000 }, () => {
  it('shows one ^C for one Ctrl-C', async () => {
    expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
    const dir = project.dir;
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    const plugin = (name: string) => JSON.stringify(join(projectRoot, 'plugins', name, 'index.ts'));
    const config = join(dir, 'harness.config.ts');
    writeFileSync(
      config,
      `export default {\n  defaults: { provider: 'scripted', model: 'scripted-default' },\n  plugins: [{ module: ${plugin('llm-scripted')}, config: { paceMs: 300, fragmentChars: 4 } }],\n};\n`,
    );
    const workspace = join(dir, 'workspace');
    mkdirSync(workspace, { recursive: true });
    terminal = new Terminal(
      `'${process.execPath}' '${bin}' run --config '${config}' --cwd '${workspace}' 'What is in this workspace?'; echo "EXITED:$?"; sleep 120`,
      cleanEnv({ HARNESS_HOME: join(dir, 'home'), TERM: 'xterm-256color' }),
    );
    const t = terminal;
    await t.waitFor((s) => s.includes('You asked'), 'the reply streaming');
    t.keys('C-c');
    const screen = await t.waitFor((s) => s.includes('EXITED:'), 'the run to end');
    expect(screen).toContain('cancelling the turn… (Ctrl-C again to quit at once)');
    expect(screen).toContain('cancelled: the turn was aborted');
    expect(screen).toContain('EXITED:130');
    expect(count(screen, '^C')).toBe(1);
  });
});
