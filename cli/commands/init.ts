/**
 * `harness init [dir]`: scaffolds a project that builds on harness-runtime — package.json (the
 * dependency, `npm test`, `npm run dev`), a harness.config.ts that starts from the built-in stack and
 * adds the project's own plugin, that plugin (one zod-typed tool), and an offline test of it
 * (node:test with `harness-runtime/testing`). Existing files are never overwritten.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { HarnessError } from '../../runtime/index.ts';
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
      start: 'harness run "Count the words of: the quick brown fox"',
    },
    dependencies: { 'harness-runtime': `^${version}` },
    devDependencies: { tsx: '^4.23.15' },
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
    'test/word-count.test.ts': `// The plugin's test: offline, on the scripted model (no key, no network).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestHarness, runTurn } from 'harness-runtime/testing';
import wordCount from '../plugins/word-count.ts';

test('the model calls word_count and answers with its result', async () => {
  const harness = await createTestHarness({
    // Step 1: call the tool; step 2: answer with what it returned.
    script: (context) =>
      context.step === 1 ? { toolCalls: [{ name: 'word_count', arguments: { text: 'the quick brown fox' } }] } : { text: \`It has \${context.toolResults[0]?.text}.\` },
    plugins: [{ plugin: wordCount, config: { maxWords: 100 } }],
  });
  try {
    const turn = await runTurn(harness, 'How many words?');
    assert.equal(turn.end.reason, 'completed');
    assert.deepEqual(turn.toolCalls, [{ name: 'word_count', arguments: '{"text":"the quick brown fox"}' }]);
    assert.equal(turn.text, 'It has 4 words.');
  } finally {
    await harness.dispose();
  }
});
`,
    'tsconfig.json': `${JSON.stringify({ compilerOptions: { target: 'ES2023', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, allowImportingTsExtensions: true, verbatimModuleSyntax: true, skipLibCheck: true, types: ['node'] }, include: ['harness.config.ts', 'plugins', 'test'] }, null, 2)}\n`,
    '.gitignore': 'node_modules/\n',
  };
}

/**
 * Writes the scaffold into `dir` (created when missing).
 * @throws HarnessError `INIT_TARGET_EXISTS` naming the files already there (nothing is written).
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
    mkdirSync(join(target, file, '..'), { recursive: true });
    writeFileSync(join(target, file), text);
  }
  const { c } = io;
  const where = relative(process.cwd(), target) || '.';
  io.out.write(
    [
      `${c.green('created')} ${target}: ${Object.keys(files).join(', ')}`,
      '',
      'Next:',
      ...(where === '.' ? [] : [`  cd ${shellQuote(where)}`]),
      '  npm install          # harness-runtime and tsx',
      "  npm test             # the plugin's offline test",
      '  npx harness dev      # chat with hot reload: save plugins/word-count.ts and it reloads',
      '',
    ].join('\n'),
  );
  return 0;
}
