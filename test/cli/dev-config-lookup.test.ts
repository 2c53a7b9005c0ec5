/**
 * `harness dev` in an app laid out as a user lays one out (the fresh-user trial's): the config is
 * found by the default lookup in the current directory (no --config), it spreads the built-in stack
 * and names a plugin of the app's own by a file path (`./plugins/stamp.ts`), and the workspace
 * (--cwd) is another folder. A saved edit of the config is seen: a changed plugin config reloads
 * that plugin and the next turn runs with it; a misspelt key is reported with its did-you-mean and
 * the old generation keeps serving. (In the trial, the clone predated the config watch and both
 * edits printed nothing.) In tmux, like a person at a terminal.
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bin, cleanEnv, journals, projectRoot, readEvents, tempDir } from './support.ts';
import { hasTmux, Terminal } from './terminal.ts';

const project = tempDir('dev-config-lookup');
let terminal: Terminal | undefined;
afterAll(() => {
  terminal?.close();
  project.cleanup();
});

function config(file: string, slowKey = 'slowMs'): string {
  return `import { defineConfig } from ${JSON.stringify(join(projectRoot, 'runtime/index.ts'))};
import { DEFAULT_DEFAULTS, defaultPlugins } from ${JSON.stringify(join(projectRoot, 'stack/index.ts'))};

export default defineConfig({
  defaults: DEFAULT_DEFAULTS,
  plugins: [
    ...defaultPlugins({ approvals: { default: 'allow-all' } }),
    { module: './plugins/stamp.ts', config: { file: ${JSON.stringify(file)}, ${slowKey}: 5000 } },
  ],
});
`;
}

describe('harness dev: the config of the current directory', () => {
  it.skipIf(!hasTmux && !process.env.CI)(
    'a saved config edit reloads the plugin it changed, and a misspelt key is reported',
    async () => {
      expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
      const app = join(project.dir, 'app');
      mkdirSync(join(app, 'plugins'), { recursive: true });
      mkdirSync(join(app, 'ws'), { recursive: true });
      writeFileSync(join(app, 'ws/a.txt'), 'hello\n');
      writeFileSync(join(app, 'package.json'), '{ "type": "module" }\n');
      // Appends one line per model call to the file its config names (relative to dev's directory, the app's).
      writeFileSync(
        join(app, 'plugins/stamp.ts'),
        `import { appendFileSync } from 'node:fs';
import { definePlugin, z } from ${JSON.stringify(join(projectRoot, 'runtime/index.ts'))};
export default definePlugin({
  name: 'stamp',
  config: z.object({ file: z.string(), slowMs: z.number() }),
  setup(ctx, config) {
    ctx.on('llm/stream', async function* (request, next) {
      for await (const chunk of next(request)) {
        if (chunk.type === 'finish') appendFileSync(config.file, JSON.stringify({ model: request.model }) + '\\n');
        yield chunk;
      }
    });
  },
});
`,
      );
      const configFile = join(app, 'harness.config.ts');
      writeFileSync(configFile, config('calls.jsonl'));
      const home = join(project.dir, 'home');
      terminal = new Terminal(`cd '${app}' && '${process.execPath}' '${bin}' dev --cwd ws; echo "EXITED:$?"; sleep 120`, cleanEnv({ HARNESS_HOME: home, TERM: 'xterm-256color' }));
      const t = terminal;
      await t.waitFor((s) => s.includes(`and the config ${configFile}`) && s.includes('› '), 'the watcher and the prompt', 90_000);

      writeFileSync(configFile, config('calls2.jsonl'));
      await t.waitFor((s) => /↻ reloaded stamp \(generation 2, [\d.]+ m?s\) with its new config \(file\)/.test(s), 'the reload of stamp with its new config');
      t.type('What is in this workspace?');
      await t.waitFor((s) => /tokens {2}/.test(s), 'the reply');
      expect(existsSync(join(app, 'calls.jsonl'))).toBe(false);
      expect(readFileSync(join(app, 'calls2.jsonl'), 'utf8').trim().split('\n').length).toBeGreaterThan(0);

      writeFileSync(configFile, config('calls2.jsonl', 'slowMS'));
      const screen = await t.waitFor((s) => s.includes('✗ reload of stamp failed'), 'the report of the misspelt key');
      expect(screen.replace(/\n/g, '')).toContain('slowMS: unknown key; did you mean `slowMs`?');
      expect(screen).toContain('(generation 2 still serving)');
      t.keys('C-d');
      await t.waitFor((s) => s.includes('EXITED:0'), 'dev to quit');
      // The journal starts with the first prompt: the failed reload after it is recorded.
      const reloads = readEvents(join(home, 'sessions', journals(home)[0]!)).filter((e) => e.type === 'plugin/reload');
      expect(reloads.map((e) => [e.data.action, e.data.outcome, e.data.name, e.data.generation])).toEqual([['reload', 'failed', 'stamp', 2]]);
    },
    300_000,
  );
});
