/**
 * Cookbook: adding a tool — defineTool + ctx.tools.register in a plugin.
 * Run: npx tsx cookbook/adding-a-tool.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, definePlugin, defineTool, HarnessError, messageText, z, type SessionEvent } from '../runtime/index.ts';

/**
 * The real path of `path` inside the workspace `cwd`: `..` and symlinks are resolved first, then the
 * result must still be inside — so `../secret` and a symlink to `/etc` are both refused.
 * @throws HarnessError `FILE_NOT_FOUND`, `PATH_OUTSIDE_WORKSPACE`.
 */
export async function insideWorkspace(cwd: string, path: string): Promise<string> {
  const root = await realpath(cwd);
  let file: string;
  try {
    file = await realpath(resolve(root, path));
  } catch {
    throw new HarnessError('FILE_NOT_FOUND', `${path} does not exist in the workspace.`);
  }
  const rel = relative(root, file);
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) throw new HarnessError('PATH_OUTSIDE_WORKSPACE', `${path} is outside the workspace.`);
  return file;
}

/** Words and lines of a text, as `wc -w -l` counts them (a last line without a newline counts too). */
export function countWords(text: string): { words: number; lines: number } {
  const words = text.split(/\s+/).filter(Boolean).length;
  const lines = text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  return { words, lines };
}

export const wordCount = defineTool({
  name: 'word_count',
  description: 'Counts the words and lines of a text file in the workspace.',
  input: z.object({ path: z.string().describe('file path, relative to the workspace') }),
  permission: 'read', // changes nothing: the read-only approval policy lets it run
  timeoutMs: 5_000,
  async execute({ path }, { cwd, signal }) {
    const file = await insideWorkspace(cwd, path); // confined: resolved through symlinks, then checked
    const { words, lines } = countWords(await readFile(file, { encoding: 'utf8', signal }));
    return { content: `${words} words in ${lines} line${lines === 1 ? '' : 's'}` };
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
