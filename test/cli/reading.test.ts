/**
 * Output you can read (issue 17, 4): an `edit_file` call shows its change as a unified diff — in the
 * approval question (in the file's context, with real line numbers), in the live result and in
 * `harness replay`; `replay --full` shows whole tool outputs; reasoning is marked apart from the
 * answer without colour (NO_COLOR, piped); an answer's markdown is rendered in a colour terminal
 * (tmux), still with the model's control characters shown, not obeyed, and left as written when piped.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { argumentsBlock, askInTerminal } from '../../cli/approval.ts';
import type { Io } from '../../cli/env.ts';
import { completeBlocksEnd, MarkdownStream } from '../../cli/markdown.ts';
import { bin, cleanEnv, harness, journalOf, readEvents, tempDir, writeProject } from './support.ts';
import { hasTmux, Terminal } from './terminal.ts';

const project = tempDir('reading');
let terminal: Terminal | undefined;
afterAll(() => {
  terminal?.close();
  project.cleanup();
});

const numbered = (count: number, word = 'line') => `${Array.from({ length: count }, (_, i) => `${word} ${i + 1}`).join('\n')}\n`;
const workspace = join(project.dir, 'ws');
mkdirSync(workspace, { recursive: true });
writeFileSync(join(workspace, 'notes.md'), numbered(20));
writeFileSync(join(workspace, 'long.txt'), numbered(30, 'row'));

const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'editor' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }],
  scripts: {
    markdown: { replies: [{ reply: { text: 'Some **bold** words and `code`.\n\n```js\nconst answer = 42;\n```\n\n- first item\n- second item\n\nAn \u001b]0;PWNED\u0007 escape.' } }] },
    editor: {
      replies: [
        {
          when: { step: 1 },
          reply: {
            reasoning: 'First I read the long file.\nThen I edit the notes.',
            toolCalls: [{ name: 'read_file', arguments: { path: 'long.txt' } }],
          },
        },
        { when: { step: 2 }, reply: { text: 'Now the edit.', toolCalls: [{ name: 'edit_file', arguments: { path: 'notes.md', old_string: 'line 12\n', new_string: 'line twelve\nline 12b\n' } }] } },
        { reply: { text: 'Edited.' } },
      ],
    },
  },
});

/** An Io that collects what is written, without colour (as piped or NO_COLOR). */
function plainIo(): Io & { text: () => string } {
  let text = '';
  const out = { write: (chunk: string) => ((text += chunk), true) } as unknown as NodeJS.WriteStream;
  const id = (s: string) => s;
  const c = new Proxy({}, { get: () => id }) as Io['c'];
  return { out, err: out, c, interactive: false, text: () => text };
}

const editRequest = {
  sessionId: 's',
  turn: 1,
  step: 2,
  callId: 'call-1',
  name: 'edit_file',
  arguments: JSON.stringify({ path: 'notes.md', old_string: 'line 12\n', new_string: 'line twelve\nline 12b\n' }),
  input: { path: 'notes.md', old_string: 'line 12\n', new_string: 'line twelve\nline 12b\n' },
  permission: 'write' as const,
  description: 'Replace exact text in a workspace file.',
};

describe('an edit_file approval', () => {
  it('shows the change as a unified diff in the file, with its line numbers, before the question', async () => {
    const io = plainIo();
    const questions: string[] = [];
    const answer = await askInTerminal(editRequest, io, async (prompt) => (questions.push(prompt), { text: 'n' }), workspace);
    expect(answer).toEqual({ allow: false, reason: 'the user said no' });
    const shown = io.text();
    expect(shown).toContain('  edit_file will change notes.md (12 lines of diff):\n');
    expect(shown).toContain('  │ --- a/notes.md\n  │ +++ b/notes.md\n  │ @@ -9,7 +9,8 @@\n  │  line 9\n  │  line 10\n  │  line 11\n  │ -line 12\n  │ +line twelve\n  │ +line 12b\n  │  line 13\n');
    expect(questions).toEqual(['? allow edit_file (write)? [y/N, a = always in this session] ']);
  });

  it('without the file (another workspace) shows the replaced text alone, and says so', () => {
    const block = argumentsBlock(editRequest, plainIo(), false, join(project.dir, 'nowhere'));
    expect(block.text).toContain('  edit_file will change notes.md, the replaced text alone (6 lines of diff):\n');
    expect(block.text).toContain('  │ -line 12\n  │ +line twelve\n  │ +line 12b\n');
  });
});

describe('reading a run and its replay', { timeout: 120_000 }, () => {
  it('the result and the transcript show the diff; --full shows whole outputs; reasoning is marked without colour', async () => {
    const home = join(project.dir, 'home');
    const result = await harness(['run', 'Edit the notes.', '--approve', 'allow-all', '--config', config, '--cwd', workspace], { home });
    expect(result.code).toBe(0);
    expect(readFileSync(join(workspace, 'notes.md'), 'utf8')).toContain('line 11\nline twelve\nline 12b\nline 13\n');
    // Live: reasoning lines carry the mark; the edit's result is its diff, not cut to 4 lines.
    expect(result.stdout).toContain('┊ First I read the long file.\n┊ Then I edit the notes.\n');
    expect(result.stdout).toContain('  │ -line 12\n  │ +line twelve\n  │ +line 12b\n  │  line 13\n');
    expect(result.stdout).toContain('  │ 4 row 4\n  │ … 27 more lines\n'); // a plain output keeps its first lines

    const journal = journalOf(result.stdout);
    const replay = await harness(['replay', journal, '--config', config], { home });
    expect(replay.code).toBe(0);
    expect(replay.stdout).toMatch(/assistant: ┊ First I read the long file\.\n\s+┊ Then I edit the notes\./);
    expect(replay.stdout).toContain('│ -line 12\n');
    expect(replay.stdout).toContain('│ +line twelve\n');
    expect(replay.stdout).toContain('│ … 27 more lines (--full shows all)');
    expect(replay.stdout).not.toContain('row 30');

    const full = await harness(['replay', journal, '--full', '--config', config], { home });
    expect(full.code).toBe(0);
    for (const row of ['row 1', 'row 17', 'row 30']) expect(full.stdout).toMatch(new RegExp(`│ \\s*\\d+\\s+${row}\\n`));
    expect(full.stdout).not.toContain('more lines');
    // The journal is what was shown: one edit, its diff in the result.
    const events = readEvents(journal);
    expect(events.filter((e) => e.type === 'tool/call').map((e) => e.data.name)).toEqual(['read_file', 'edit_file']);

    const refused = await harness(['replay', journal, '--full', '--verify', '--config', config], { home });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--verify cannot be combined with --full');
  });
});

describe('markdown in a terminal', { timeout: 120_000 }, () => {
  it('is rendered a block at a time: up to the last blank line outside a code fence', () => {
    expect(completeBlocksEnd('para one\n\npara t')).toBe('para one\n\n'.length);
    expect(completeBlocksEnd('```\ncode\n\nmore')).toBe(0); // a blank line inside a fence is not the end of a block
    expect(completeBlocksEnd('```\ncode\n\n```\nafter')).toBe('```\ncode\n\n```\n'.length);
    const rendered: string[] = [];
    const stream = new MarkdownStream((md) => (rendered.push(md), `<${md.trim()}>\n`));
    expect(stream.push('**a**\n')).toBe('');
    expect(stream.push('\nb')).toBe('<**a**>\n');
    expect(stream.flush()).toBe('\n<b>\n');
    expect(rendered).toEqual(['**a**\n\n', 'b']);
  });

  it.skipIf(!hasTmux && !process.env.CI)('renders bold, code fences and lists; control characters stay visible; piped output keeps the markdown', async () => {
    expect(hasTmux, 'tmux is needed for this test (apt-get install tmux)').toBe(true);
    const home = join(project.dir, 'home-md');
    terminal = new Terminal(
      `'${process.execPath}' '${bin}' run 'Say it in markdown.' --model markdown --config '${config}' --cwd '${workspace}'; echo "EXITED:$?"; sleep 120`,
      cleanEnv({ HARNESS_HOME: home, TERM: 'xterm-256color', NO_COLOR: undefined }),
    );
    const screen = await terminal.waitFor((s) => s.includes('EXITED:'), 'the run to end', 90_000);
    expect(screen).toContain('EXITED:0');
    expect(screen).toContain('Some bold words and code.');
    expect(screen).toContain('const answer = 42;');
    expect(screen).toMatch(/\* first item\n\s*\* second item/);
    expect(screen).not.toContain('**');
    expect(screen).not.toContain('```');
    expect(screen).toContain('An ␛]0;PWNED␇ escape.');
    terminal.close();

    const piped = await harness(['run', 'Say it in markdown.', '--model', 'markdown', '--config', config, '--cwd', workspace], { home });
    expect(piped.stdout).toContain('Some **bold** words and `code`.\n\n```js\nconst answer = 42;\n```\n\n- first item\n- second item\n\nAn ␛]0;PWNED␇ escape.');
  });
});
