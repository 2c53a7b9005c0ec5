/**
 * A prompt has a size limit on the CLI, as a request body has on serve (413): `harness run` with
 * 20 MB on stdin (or a prompt argument past `--max-prompt-bytes`) is refused with PROMPT_TOO_LARGE,
 * exit 2, naming the size, the limit and the flag — before any journal is written (chat and dev say
 * the same error for such a line and go on). Raised, the limit
 * lets a large prompt through, and the scripted default model quotes back only its head.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, journalOf, journals, projectRoot, readEvents, tempDir } from './support.ts';

const project = tempDir('prompt-size');
afterAll(() => project.cleanup());
const demo = join(projectRoot, 'cookbook/demo-workspace');

describe('the prompt size limit', { timeout: 120_000 }, () => {
  it('refuses 20 MB on stdin and a prompt argument over --max-prompt-bytes, journaling nothing', async () => {
    const home = join(project.dir, 'refused');
    const [stdin, argument] = await Promise.all([
      harness(['run', '-', '--cwd', demo], { home, input: 'x'.repeat(20 * 1024 * 1024) }),
      harness(['run', 'What is in this workspace?', '--max-prompt-bytes', '16', '--cwd', demo], { home }),
    ]);
    expect(stdin.code).toBe(2);
    expect(stdin.stdout).toBe('');
    expect(stdin.stderr).toBe(
      'error PROMPT_TOO_LARGE: The prompt is 20,971,520 bytes (20.0 MiB), more than the 1,048,576 bytes (1.0 MiB) a prompt may have. ' +
        'Pass --max-prompt-bytes <bytes> to raise the limit (e.g. --max-prompt-bytes 20971520), or put the text in a file of the workspace for the agent to read.\n',
    );
    expect(argument.code).toBe(2);
    expect(argument.stderr).toMatch(/^error PROMPT_TOO_LARGE: The prompt is 26 bytes \(0\.00 MiB\), more than the 16 bytes \(0\.00 MiB\) a prompt may have\. Pass --max-prompt-bytes/);
    expect(journals(home)).toEqual([]);
  });

  it('chat refuses a line over the limit with the coded error and takes the next one', async () => {
    const home = join(project.dir, 'chat');
    const result = await harness(['chat', '--max-prompt-bytes', '16', '--cwd', demo], { home, input: 'What is in this workspace?\nHi there\n' });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('error PROMPT_TOO_LARGE: The prompt is 26 bytes (0.00 MiB), more than the 16 bytes (0.00 MiB) a prompt may have.');
    expect(result.stdout).toContain('The user asked: "Hi there".');
    const [journal] = journals(home);
    const prompts = readEvents(join(home, 'sessions', journal!)).filter((event) => event.type === 'user/message');
    expect(prompts.map((event) => event.data.message.content[0].text)).toEqual(['Hi there']);
  });

  it('takes a prompt within a raised limit, and the scripted model quotes back its head only', async () => {
    const home = join(project.dir, 'raised');
    const prompt = 'y'.repeat(1536 * 1024);
    const result = await harness(['run', '-', '--max-prompt-bytes', String(2 * 1024 * 1024), '--cwd', demo], { home, input: `${prompt}\n` });
    expect(result.code, result.stderr).toBe(0);
    const events = readEvents(journalOf(result.stdout));
    const message = events.find((event) => event.type === 'user/message');
    expect(message?.data.message.content[0].text).toBe(prompt);
    const reasoning = events
      .filter((event) => event.type === 'assistant/chunk' && event.data.chunk.type === 'reasoning-delta')
      .map((event) => event.data.chunk.text)
      .join('');
    expect(reasoning).toContain('…" (200 of its 1,572,864 characters; the rest cut)');
    expect(reasoning.length).toBeLessThan(500);
  });
});
