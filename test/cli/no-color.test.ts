/**
 * `NO_COLOR` and `FORCE_COLOR` decide colour everywhere the CLI prints, the spinner too: under a
 * terminal `harness run` with `NO_COLOR=1` drew its spinner as `ESC[36m⠋ESC[39m thinking…` (ora
 * colours through chalk, which reads FORCE_COLOR but not NO_COLOR; only `--no-color` reached it).
 * Now the one decision (cli/env.ts colourEnabled) is the spinner's: no SGR escape at all with
 * `NO_COLOR=1` or `FORCE_COLOR=0`, and colours as before with neither.
 *
 * Needs tmux (`apt-get install tmux`; .ci/run installs it). Without tmux the test is skipped locally
 * and fails on CI.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { colourEnabled } from '../../cli/env.ts';
import { bin, cleanEnv, projectRoot, tempDir } from './support.ts';
import { hasTmux, Terminal } from './terminal.ts';

const project = tempDir('no-color');
const terminals: Terminal[] = [];
afterAll(() => {
  for (const t of terminals) t.close();
  project.cleanup();
});

/** A select graphic rendition (colour, bold, dim…) escape. */
const SGR = new RegExp(`${'\x1b'}\\[[0-9;]*m`);

function writeProject(): { config: string; workspace: string } {
  const dir = project.dir;
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const plugin = (name: string) => JSON.stringify(join(projectRoot, 'plugins', name, 'index.ts'));
  const config = join(dir, 'harness.config.ts');
  // Paced, so the spinner is up for a while before each reply.
  writeFileSync(
    config,
    `export default {
  defaults: { provider: 'scripted', model: 'scripted-default' },
  plugins: [{ module: ${plugin('llm-scripted')}, config: { paceMs: 150, fragmentChars: 40 } }],
};
`,
  );
  const workspace = join(dir, 'workspace');
  mkdirSync(workspace, { recursive: true });
  return { config, workspace };
}

/** Everything `harness run` wrote to a real terminal under `colour`'s environment, escapes and all. */
async function runInTerminal(name: string, colour: Record<string, string | undefined>): Promise<string> {
  const { config, workspace } = writeProject();
  const output = join(project.dir, `${name}.out`);
  const inner = `read go; exec '${process.execPath}' '${bin}' run --config '${config}' --cwd '${workspace}' 'Say hello.'`;
  const env = cleanEnv({ HARNESS_HOME: join(project.dir, `home-${name}`), TERM: 'xterm-256color', NO_COLOR: undefined, ...colour });
  const t = new Terminal(`sh -c "${inner}"; echo "EXITED:$?"; sleep 120`, env);
  terminals.push(t);
  t.record(output);
  while (!existsSync(output)) await new Promise((r) => setTimeout(r, 50));
  t.keys('Enter');
  const screen = await t.waitFor((s) => s.includes('EXITED:'), 'the run to end', 90_000);
  expect(screen).toContain('EXITED:0');
  t.close();
  return readFileSync(output, 'utf8');
}

describe.skipIf(!hasTmux && !process.env.CI)('colour in a real terminal', { timeout: 240_000 }, () => {
  it('colours the spinner when nothing says otherwise (the control)', async () => {
    expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
    // CI unset: the spinner colours through ora's chalk, whose supports-color gives level 0 under
    // CI=true outside a known CI provider (the rest of the CLI follows colourEnabled).
    const written = await runInTerminal('colour', { CI: undefined });
    expect(written).toContain('thinking…');
    expect(written).toMatch(new RegExp(`${'\x1b'}\\[36m.${'\x1b'}\\[39m thinking…`));
  });

  it('prints no colour at all with NO_COLOR=1 (before: the spinner was cyan)', async () => {
    const written = await runInTerminal('no-color', { NO_COLOR: '1' });
    expect(written).toContain('thinking…'); // the spinner was up
    expect(written).not.toMatch(SGR);
  });

  it('prints no colour at all with FORCE_COLOR=0 (before: everything but the spinner was coloured)', async () => {
    const written = await runInTerminal('force-0', { FORCE_COLOR: '0' });
    expect(written).toContain('thinking…');
    expect(written).not.toMatch(SGR);
  });
});

describe('colourEnabled', () => {
  const tty = { isTTY: true };
  const pipe = { isTTY: false };
  it('follows --no-color, NO_COLOR, FORCE_COLOR, then the stream', () => {
    expect(colourEnabled(tty, { TERM: 'xterm' }, [])).toBe(true);
    expect(colourEnabled(tty, { TERM: 'dumb' }, [])).toBe(false);
    expect(colourEnabled(pipe, {}, [])).toBe(false);
    expect(colourEnabled(tty, { NO_COLOR: '1' }, [])).toBe(false);
    expect(colourEnabled(tty, { NO_COLOR: '' }, [])).toBe(true); // no-color.org: present and not empty
    expect(colourEnabled(tty, {}, ['node', 'harness', '--no-color'])).toBe(false);
    expect(colourEnabled(pipe, { FORCE_COLOR: '1' }, [])).toBe(true);
    expect(colourEnabled(pipe, { FORCE_COLOR: '' }, [])).toBe(true);
    expect(colourEnabled(tty, { FORCE_COLOR: '0' }, [])).toBe(false);
    expect(colourEnabled(tty, { FORCE_COLOR: 'false' }, [])).toBe(false);
    expect(colourEnabled(pipe, { FORCE_COLOR: '1', NO_COLOR: '1' }, [])).toBe(false);
  });
});
