/**
 * `harness init [dir]`: scaffolds a project that builds on harness-runtime — package.json (the
 * dependency, `npm test`, `npm start`, `npm run dev`, `npm run typecheck`), a harness.config.ts that
 * starts from the built-in stack and adds the project's own plugin, that plugin (one zod-typed tool),
 * a script for the offline scripted model that calls the tool (`npm start` runs it), and an offline
 * test of the plugin on that script (node:test with `harness-runtime/testing`). Existing files are
 * never overwritten. harness-runtime is not on the npm registry: the next steps say to install it
 * from a tarball or a folder.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { HarnessError } from '../../runtime/index.ts';
import { ensureDirectory } from '../../runtime/internal.ts';
import { cliVersion, shellQuote, type Io } from '../env.ts';

/** The files `init` writes, relative to the project folder, with their text. */
export function scaffold(name: string, version: string): Record<string, string> {
  const packageJson = {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    scripts: {
      test: 'node --import tsx --test test/*.test.ts',
      dev: 'harness dev',
      // The scripted model `word-counter` (model-scripts/word-counter.ts) calls the plugin's tool: offline, no key.
      start: 'harness run -m word-counter "Count the words of: the quick brown fox"',
      typecheck: 'tsc',
    },
    dependencies: { 'harness-runtime': `^${version}` },
    devDependencies: { '@types/node': '^20.19.43', tsx: '^4.23.15', typescript: '^5.9.3' },
  };
  return {
    'package.json': `${JSON.stringify(packageJson, null, 2)}\n`,
    'harness.config.ts': `// Which plugins load, in order, with their config: the built-in stack (models, retry, token meter,
// compaction, workspace tools, approvals) plus this project's own plugin. \`harness dev\` reloads a
// plugin of this folder when you save it.
import { defineConfig } from 'harness-runtime';
import { DEFAULT_DEFAULTS, defaultPlugins } from 'harness-runtime/stack';

export default defineConfig({
  // The offline scripted model; \`harness run -p openai\` (with OPENAI_API_KEY) picks a real one.
  defaults: DEFAULT_DEFAULTS,
  plugins: [
    ...defaultPlugins({
      // The scripted model also answers as \`word-counter\`, the script that \`npm start\` runs.
      scripted: { scripts: { 'word-counter': './model-scripts/word-counter.ts' } },
      // Change one plugin of the stack by naming it, e.g. approvals: { default: 'allow-all' },
      // leave one out with false, or add an OpenAI-compatible server as one entry:
      // providers: { ollama: { api: 'chat', baseURL: 'http://127.0.0.1:11434/v1', apiKeyEnv: false, allowUnknownModels: true } },
    }),
    { module: './plugins/word-count.ts', config: { maxWords: 10_000 } },
  ],
});
`,
    'plugins/word-count.ts': `// A plugin with one tool: counts the words of a text. Its config is validated with zod.
import { definePlugin, defineTool, z } from 'harness-runtime';

export default definePlugin({
  name: 'word-count',
  config: z.object({ maxWords: z.number().int().positive().default(10_000) }).default({ maxWords: 10_000 }),
  setup(ctx, config) {
    ctx.tools.register(
      defineTool({
        name: 'word_count',
        description: 'Counts the words of a text.',
        input: z.object({ text: z.string().describe('the text to count') }),
        permission: 'read',
        execute: ({ text }) => {
          const words = text.split(/\\s+/).filter(Boolean).length;
          return words > config.maxWords ? \`more than \${config.maxWords} words\` : \`\${words} words\`;
        },
      }),
    );
  },
});
`,
    'model-scripts/word-counter.ts': `// The offline scripted model \`word-counter\` (named in harness.config.ts; \`npm start\` runs it): step 1
// calls word_count on the text after the prompt's first colon, step 2 answers with what it returned.
// A script decides from the conversation alone, so a run is deterministic and replays exactly.
import type { ScriptContext, ScriptReply } from 'harness-runtime/testing';

export default function wordCounter(context: ScriptContext): ScriptReply {
  if (context.step === 1) return { toolCalls: [{ name: 'word_count', arguments: { text: context.prompt.slice(context.prompt.indexOf(':') + 1).trim() } }] };
  return { text: \`It has \${context.toolResults[0]?.text ?? 'no count'}.\` };
}
`,
    'test/word-count.test.ts': `// The plugin's test: offline, on the script of \`npm start\` (no key, no network).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestHarness, runTurn } from 'harness-runtime/testing';
import wordCounter from '../model-scripts/word-counter.ts';
import wordCount from '../plugins/word-count.ts';

test('the model calls word_count and answers with its result', async () => {
  const harness = await createTestHarness({
    script: wordCounter,
    plugins: [{ plugin: wordCount, config: { maxWords: 100 } }],
  });
  try {
    const turn = await runTurn(harness, 'Count the words of: the quick brown fox');
    assert.equal(turn.end.reason, 'completed');
    assert.deepEqual(turn.toolCalls, [{ name: 'word_count', arguments: '{"text":"the quick brown fox"}' }]);
    assert.equal(turn.text, 'It has 4 words.');
  } finally {
    await harness.dispose();
  }
});
`,
    'tsconfig.json': `${JSON.stringify({ compilerOptions: { target: 'ES2023', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, allowImportingTsExtensions: true, verbatimModuleSyntax: true, skipLibCheck: true, types: ['node'] }, include: ['harness.config.ts', 'plugins', 'model-scripts', 'test'] }, null, 2)}\n`,
    '.gitignore': 'node_modules/\n',
  };
}

/**
 * Writes the scaffold into `dir` (created when missing).
 * @throws HarnessError `INIT_TARGET_EXISTS` naming the files already there (nothing is written);
 *   `INIT_TARGET_INVALID` when a folder or file cannot be made there (a file in the way, no
 *   permission, a path under /proc), naming the path and the system's reason.
 */
export async function initCommand(dir: string | undefined, io: Io): Promise<number> {
  const target = resolve(dir ?? '.');
  const name =
    basename(target)
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[._-]+/, '') || 'harness-project';
  const files = scaffold(name, cliVersion());
  const taken = Object.keys(files).filter((file) => existsSync(join(target, file)));
  if (taken.length > 0) {
    throw new HarnessError('INIT_TARGET_EXISTS', `${target} already has ${taken.join(', ')}; harness init writes only into a folder without them (give another folder: harness init <dir>).`, {
      details: { path: target, files: taken },
    });
  }
  for (const [file, text] of Object.entries(files)) {
    const path = join(target, file);
    try {
      // Not mkdirSync({ recursive }): under /proc Node's retries forever, deaf to signals.
      ensureDirectory(dirname(path));
      writeFileSync(path, text);
    } catch (error) {
      const cause = HarnessError.is(error) && error.cause !== undefined ? error.cause : error;
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new HarnessError('INIT_TARGET_INVALID', `Cannot write ${path} (${reason}); give harness init a folder you can write to: harness init <dir>.`, {
        cause: error,
        details: { path: target, file, errno: (cause as NodeJS.ErrnoException).code ?? 'UNKNOWN' },
      });
    }
  }
  const { c } = io;
  // The folder as the user typed it, or its absolute path when that is shorter; a path relative to
  // the working directory could climb far (`cd ../../../../tmp/x` for /tmp/x).
  const typed = dir ?? '.';
  const where = target === process.cwd() ? '.' : typed.length <= target.length ? typed : target;
  io.out.write(
    [
      `${c.green('created')} ${target}: ${Object.keys(files).join(', ')}`,
      '',
      'Next:',
      ...(where === '.' ? [] : [`  cd ${shellQuote(where)}`]),
      // Not on the npm registry: installing the tarball (or folder) also writes it into package.json and installs the rest.
      '  npm install <harness-runtime .tgz or folder>  # not on the npm registry: `npm pack` in a Harness checkout makes the .tgz',
      "  npm test             # the plugin's offline test",
      "  npm start            # a run on the offline scripted model that calls the plugin's tool",
      '  npm run typecheck    # tsc over the config, the plugin, the script and the test',
      '  npx harness dev      # chat with hot reload: save plugins/word-count.ts and it reloads',
      '',
    ].join('\n'),
  );
  return 0;
}
