/**
 * A plugin whose `llm/stream` middleware throws a plain `Error` (not only a TypeError), run through
 * the CLI with the built-in stack: the turn ends `PLUGIN_ERROR` naming the plugin and the hook, it is
 * journaled as such, and `--debug` prints the stack. It used to end `UNKNOWN: Internal error in the
 * agent loop: mid-stream boom`, naming neither.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, journalOf, projectRoot, readEvents, tempDir } from './support.ts';

const project = tempDir('plugin-stream-error');
afterAll(() => project.cleanup());
const home = join(project.dir, 'home');
const workspace = join(project.dir, 'ws');
mkdirSync(workspace);
writeFileSync(join(project.dir, 'package.json'), '{ "type": "module" }\n');
writeFileSync(
  join(project.dir, 'throwstream.ts'),
  `import { definePlugin } from ${JSON.stringify(join(projectRoot, 'runtime/index.ts'))};
export default definePlugin({
  name: 'throwstream',
  setup(ctx) {
    ctx.on('llm/stream', async function* (request, next) {
      throw new Error('mid-stream boom');
    });
  },
});
`,
);
const config = join(project.dir, 'h-throwstream.config.ts');
writeFileSync(
  config,
  `import { DEFAULT_DEFAULTS, defaultPlugins } from ${JSON.stringify(join(projectRoot, 'stack/index.ts'))};
export default {
  defaults: DEFAULT_DEFAULTS,
  plugins: [...defaultPlugins({ approvals: { default: 'allow-all' } }), { module: './throwstream.ts' }],
};
`,
);

describe('a plugin that throws in llm/stream', { timeout: 120_000 }, () => {
  it('harness --debug run: PLUGIN_ERROR naming the plugin and the hook, the stack, and the turn journaled so', async () => {
    const result = await harness(['--debug', '--config', config, 'run', '--cwd', workspace, 'hi'], { home, cwd: project.dir, timeoutMs: 110_000 });
    const output = `${result.stdout}\n${result.stderr}`;
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/error PLUGIN_ERROR: .*"throwstream".*llm\/stream|error PLUGIN_ERROR: .*llm\/stream.*"throwstream"/);
    expect(result.stderr).toContain('mid-stream boom');
    expect(output).not.toContain('Internal error in the agent loop');
    // --debug: the stack, down to the plugin's file.
    expect(result.stderr).toMatch(/Error: mid-stream boom\n\s+at .*throwstream\.ts/);
    const events = readEvents(journalOf(result.stderr));
    const end = events.find((event) => event.type === 'turn/end');
    expect(end?.data).toMatchObject({ reason: 'error', failure: { code: 'PLUGIN_ERROR' } });
    expect(JSON.stringify(end?.data.failure)).toContain('throwstream');
    expect(end?.data.failure.message).toContain('llm/stream');
  });
});
