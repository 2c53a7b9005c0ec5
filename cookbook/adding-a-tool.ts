/**
 * Cookbook: adding a tool — defineTool + ctx.tools.register in a plugin.
 * Run: npx tsx cookbook/adding-a-tool.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, definePlugin, defineTool, HarnessError, messageText, z, type SessionEvent } from '../runtime/index.ts';

export const wordCount = defineTool({
  name: 'word_count',
  description: 'Counts the words and lines of a text file in the workspace.',
  input: z.object({ path: z.string().describe('file path, relative to the workspace') }),
  permission: 'read', // changes nothing: the read-only approval policy lets it run
  timeoutMs: 5_000,
  async execute({ path }, { cwd, signal }) {
    const file = resolve(cwd, path);
    if (relative(cwd, file).startsWith('..')) throw new HarnessError('PATH_OUTSIDE_WORKSPACE', `${path} is outside the workspace.`);
    const text = await readFile(file, { encoding: 'utf8', signal });
    const words = text.split(/\s+/).filter(Boolean).length;
    return { content: `${words} words in ${text.split('\n').length} lines` };
  },
});

export const wordCountPlugin = definePlugin({
  name: 'word-count',
  setup(ctx) {
    ctx.tools.register(wordCount); // unregistered again when the plugin unloads or reloads
  },
});

export async function main(): Promise<{ answer: string; result: string; decidedBy: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-'));
  const harness = await createHarness({
    config: {
      defaults: { provider: 'scripted', model: 'count-words' },
      plugins: [
        { module: '../plugins/llm-scripted/index.ts', config: { scripts: { 'count-words': './scripts/count-words.ts' } } },
        { module: '../plugins/approvals/index.ts' },
        { plugin: wordCountPlugin },
      ],
    },
    baseDir: fileURLToPath(new URL('.', import.meta.url)),
    dataDir,
  });
  try {
    const session = await harness.createSession({ cwd: fileURLToPath(new URL('demo-workspace', import.meta.url)) });
    const events: SessionEvent[] = [];
    for await (const event of session.run('How long is the README?', { approve: harness.ctx.approvals!.create('read-only') })) events.push(event);
    const result = events.find((e): e is SessionEvent<'tool/result'> => e.type === 'tool/result')!;
    const decision = events.find((e): e is SessionEvent<'approval/decided'> => e.type === 'approval/decided')!;
    const answer = events.filter((e): e is SessionEvent<'assistant/message'> => e.type === 'assistant/message').at(-1)!;
    const block = result.data.message.content.find((b) => b.type === 'tool-result');
    const resultText = block?.type === 'tool-result' ? block.content.map((part) => (part.type === 'text' ? part.text : '')).join('') : '';
    return { answer: messageText(answer.data.message), result: resultText, decidedBy: decision.data.decidedBy };
  } finally {
    await harness.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
