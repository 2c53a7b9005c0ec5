/**
 * Scripting (issue 17, 5): `harness run --json` prints the journal's records and nothing else — the
 * header, then each event as journaled — so its lines equal the journal's; `harness run -` reads the
 * prompt from stdin; usage errors exit 2.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, journals, projectRoot, tempDir, writeProject } from './support.ts';

const project = tempDir('scripting');
afterAll(() => project.cleanup());

const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'scripted-default' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }],
});
const demo = join(projectRoot, 'cookbook/demo-workspace');

/** Every line of a JSONL text, parsed (a line that is not JSON fails the test). */
const records = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));

describe('harness run --json', { timeout: 120_000 }, () => {
  it('prints the header and every event of a new session, as journaled, and nothing else', async () => {
    const home = join(project.dir, 'home-json');
    const result = await harness(['run', '--json', 'What is in this workspace?', '--config', config, '--cwd', demo, '--approve', 'read-only'], { home });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const [file] = journals(home);
    const journal = readFileSync(join(home, 'sessions', file!), 'utf8');
    const printed = records(result.stdout);
    expect(printed).toEqual(records(journal));
    // A real turn: tool calls, approvals and their results are among the records.
    expect(printed[0]).toMatchObject({ type: 'session', version: 1 });
    expect(printed.map((r) => r.type)).toEqual(expect.arrayContaining(['session/title', 'turn/start', 'user/message', 'assistant/chunk', 'tool/call', 'approval/decided', 'tool/result', 'turn/end']));
    expect(printed.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } });

    // Resumed: the header, then only the events this command appended.
    const before = records(journal).length;
    const resumed = await harness(['run', '--json', 'And again.', '--resume', file!.replace('.jsonl', ''), '--config', config, '--approve', 'read-only'], { home });
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    const all = records(readFileSync(join(home, 'sessions', file!), 'utf8'));
    expect(records(resumed.stdout)).toEqual([all[0], ...all.slice(before)]);
    expect(records(resumed.stdout)[1]).toMatchObject({ type: 'turn/start', data: { turn: 2 } });
  });

  it('a failing command prints its error on stderr and nothing on stdout', async () => {
    const result = await harness(['run', '--json', 'Hello', '--config', config, '--cwd', demo, '--model', 'no-such-model'], { home: join(project.dir, 'home-fail') });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^error UNKNOWN_MODEL: /);
  });
});

describe('harness run -', { timeout: 120_000 }, () => {
  it('reads the prompt from stdin (to its end, without the trailing newline)', async () => {
    const home = join(project.dir, 'home-stdin');
    const result = await harness(['run', '-', '--json', '--config', config, '--cwd', demo], { home, input: 'First line of the prompt.\nSecond line.\n\n' });
    expect(result.code).toBe(0);
    const user = records(result.stdout).find((r) => r.type === 'user/message');
    expect(user.data.message.content).toEqual([{ type: 'text', text: 'First line of the prompt.\nSecond line.' }]);
    expect(records(result.stdout).find((r) => r.type === 'session/title').data.title).toBe('First line of the prompt. Second line.');
  });

  it('an empty stdin is an empty prompt: a usage error (exit 2), no journal', async () => {
    const home = join(project.dir, 'home-empty');
    const result = await harness(['run', '-', '--config', config, '--cwd', demo], { home, input: '\n' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error EMPTY_PROMPT: /);
    expect(journals(home)).toEqual([]);
  });
});
