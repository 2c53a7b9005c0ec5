/**
 * The README stays accurate: its plugin example loads and works, its quick start names scripts that
 * exist, and the CLI at a glance lists the commands the CLI has.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createHarness } from '../../runtime/index.ts';
import { harness as cli, projectRoot, tempDir } from './support.ts';

const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8');
const scratch = join(projectRoot, 'test', `.tmp-readme-${process.pid}`);
const home = tempDir('readme');
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
  home.cleanup();
});

describe('README', { timeout: 120_000 }, () => {
  it('its plugin example loads, wraps llm/stream and emits its hook', async () => {
    const block = /## A plugin\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    const dir = join(scratch, 'plugins/stream-logger');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'index.ts'), block!.replace("'harness-runtime'", JSON.stringify(join(projectRoot, 'runtime/index.ts'))));
    const h = await createHarness({
      config: {
        defaults: { provider: 'scripted', model: 'scripted-default' },
        plugins: [{ module: join(projectRoot, 'plugins/llm-scripted/index.ts') }, { module: join(dir, 'index.ts'), config: { slowMs: 60_000 } }],
      },
      dataDir: home.dir,
    });
    try {
      const calls: { model: string; chunkCount: number }[] = [];
      h.kernel.bus.add('stream-logger/call', (event: { model: string; chunkCount: number }) => void calls.push(event));
      const session = await h.createSession({ cwd: home.dir });
      const end = await session.runToEnd('Hello');
      expect(end.data.reason).toBe('completed');
      expect(calls).toEqual([{ model: 'scripted-default', chunkCount: expect.any(Number), ms: expect.any(Number) }]);
      expect(calls[0]!.chunkCount).toBeGreaterThan(3);
    } finally {
      await h.dispose();
    }
  });

  it('names the quick-start scripts and the commands the CLI has', async () => {
    const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8'));
    expect(readme).toContain('npm ci && npm start');
    expect(pkg.scripts.start).toBeDefined();
    expect(pkg.scripts.test).toBe('vitest run');
    const help = await cli(['--help'], { home: home.dir });
    const section = /^Commands:\n([\s\S]*?)\n\n/m.exec(help.stdout)?.[1] ?? '';
    const commands = [...section.matchAll(/^ {2}(\w+) /gm)].map((m) => m[1]).filter((c) => c !== 'help');
    expect(commands).toEqual(['run', 'chat', 'dev', 'replay', 'sessions', 'fork', 'serve', 'view', 'init', 'export', 'import']);
    for (const command of commands) expect(readme).toContain(`harness ${command}`);
    // What --help says about configs and data directories, the README says too.
    for (const words of ['$HARNESS_CONFIG', "the config's `dataDir`", '$HARNESS_HOME', '--close-turn']) expect(readme).toContain(words);
    expect(help.stdout).toContain('$HARNESS_CONFIG');
    // Subcommands too (the CLI table lists each), and where the config falls back to: the same words as --help.
    const importHelp = await cli(['import', '--help'], { home: home.dir });
    const subcommands = [...importHelp.stdout.slice(importHelp.stdout.indexOf('Commands:')).matchAll(/^ {2}(\w+) /gm)].map((m) => m[1]).filter((c) => c !== 'help');
    expect(subcommands).toEqual(['harness', 'dsh']);
    for (const sub of subcommands) expect(readme).toContain(`harness import ${sub} <file>`);
    expect(help.stdout).toContain('else the built-in stack');
    expect(readme.replace(/\s+/g, ' ')).toContain('in the working directory if there is one, else the built-in stack');
  });

  it('says what is confined and what is not: the file tools are, exec_command is not (README and the built-in stack)', () => {
    const config = readFileSync(join(projectRoot, 'stack/index.ts'), 'utf8');
    expect(config).not.toMatch(/exec_command[^\n]*confined to the session's cwd/);
    expect(config).toContain('exec_command runs `bash -c` IN the workspace directory, but a shell');
    expect(readme).toContain('`exec_command` is not\nconfined');
  });
});
