/**
 * Terminal escape sequences in what a model says, what a tool returns or what a journal holds are
 * printed visibly (`␛`), never obeyed: they cannot clear the screen, set the window title or colour
 * the output. The CLI's own colours stay.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, journalOf, readEvents, tempDir, writeProject } from './support.ts';

const project = tempDir('escapes');
afterAll(() => project.cleanup());

const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'scripted-default' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }],
});

/** Control sequences a terminal would obey: OSC (title), BEL, clear screen, blink, a C1 CSI; and a right-to-left override (shown text reads otherwise). */
const HOSTILE = ['\x1b]0;PWNED\x07', '\x1b[2J', '\x1b[5m', '\x9b', '\x07', '\u202e'];

/** Without the CLI's own colours (checked to be only those by expectSafe first). */
const plain = (text: string): string => text.replace(/\x1b\[[0-9;]*m/g, '');

function expectSafe(text: string): void {
  for (const sequence of HOSTILE) expect(text.includes(sequence), `${JSON.stringify(sequence)} reached the terminal`).toBe(false);
  // Whatever escape is left is one of our own colours (SGR with the codes picocolors uses).
  for (const match of text.matchAll(/\x1b[^a-zA-Z]*[a-zA-Z]?/g)) expect(match[0]).toMatch(/^\x1b\[(?:[0-9]|[1-4][0-9])m$/);
}

describe('escape sequences from models, tools and journals', { timeout: 120_000 }, () => {
  it('run, replay, replay --at and sessions show them as ␛… and keep their own colours', async () => {
    const home = join(project.dir, 'home');
    const workspace = join(project.dir, 'ws');
    mkdirSync(workspace, { recursive: true });
    // The scripted model reads README.md and quotes its first line; the tool result shows its lines.
    writeFileSync(join(workspace, 'README.md'), '# Evil \x1b]0;PWNED\x07 title\x1b[2J\n\nsecond \x9b31m line\x07 \u202ereversed\n');
    const env = { NO_COLOR: undefined, FORCE_COLOR: '1' };
    // The prompt (echoed by the model, and the session's title) carries one too.
    const result = await harness(['run', 'What is \x1b[5mhere\x1b[0m?', '--cwd', workspace, '--config', config], { home, env });
    expect(result.code).toBe(0);
    expectSafe(result.stdout);
    expectSafe(result.stderr);
    expect(result.stdout).toContain('\x1b['); // our colours are on
    const shown = plain(result.stdout);
    expect(shown).toContain('# Evil ␛]0;PWNED␇ title␛[2J'); // the tool result and the model's quote
    expect(shown).toContain('What is ␛[5mhere␛[0m?'); // the model's reasoning echoes the prompt
    expect(shown).toContain('second \\u009b31m line␇ \\u202ereversed');
    const journal = journalOf(shown);
    // The journal keeps the exact bytes; only the display is made safe.
    expect(JSON.stringify(readEvents(journal))).toContain('\\u001b]0;PWNED\\u0007');

    const toolResult = readEvents(journal).find((e) => e.type === 'tool/result' && JSON.stringify(e).includes('PWNED'))!;
    const [transcript, state, sessions] = await Promise.all([
      harness(['replay', journal, '--config', config], { home, env }),
      harness(['replay', journal, '--at', String(toolResult.seq), '--config', config], { home, env }),
      harness(['sessions', '--config', config], { home, env }),
    ]);
    for (const output of [transcript, state, sessions]) {
      expect(output.code).toBe(0);
      expectSafe(output.stdout);
      expectSafe(output.stderr);
    }
    expect(plain(transcript.stdout)).toContain('␛]0;PWNED␇');
    expect(plain(transcript.stdout)).toContain('What is ␛[5mhere␛[0m?');
    expect(plain(state.stdout)).toContain('␛]0;PWNED␇');
    expect(plain(sessions.stdout)).toContain('What is ␛[5mhere␛[0m?'); // the title
  });
});
