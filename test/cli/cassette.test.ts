/**
 * `replay --cassette` on ordinary sessions finds them the same: a session that compacted (the
 * config's compaction plugin compacts again at the same points, its summaries served from the
 * recording), and a session that was SIGKILLed and then resumed (its turn was closed `interrupted`
 * by the journal's repair; the re-run stops where the recording was cut). Ctrl-C at the approval
 * prompt is covered in approval-prompt.test.ts; the cassette's semantics in test/cassette/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { filesOf, harness, projectRoot, readEvents, start, tempDir, writeProject } from './support.ts';

const project = tempDir('cassette');
const children: { kill: (signal: NodeJS.Signals) => boolean }[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  project.cleanup();
});

const demo = join(projectRoot, 'cookbook/demo-workspace');

describe('replay --cassette on ordinary sessions', { timeout: 180_000 }, () => {
  it('a session that compacted re-runs the same (exit 0)', async () => {
    // A small context window: the second and third turns start with a compaction.
    const config = writeProject(join(project.dir, 'compacting'), {
      defaults: { provider: 'scripted', model: 'scripted-default' },
      plugins: [
        { name: 'llm-scripted', config: { contextWindow: 2000 } },
        { name: 'token-meter' },
        { name: 'compaction', config: { reserveTokens: 1700, keepTurns: 1 } },
        { name: 'tools-workspace' },
        { name: 'approvals' },
      ],
    });
    const home = join(project.dir, 'home-compacting');
    const chat = await harness(['chat', '--config', config, '--cwd', demo], { home, input: 'What is in this workspace?\nAnd again?\nOnce more?\n' });
    expect(chat.code).toBe(0);
    const path = join(home, 'sessions', filesOf(join(home, 'sessions')).find((name) => name.endsWith('.jsonl'))!);
    const events = readEvents(path);
    expect(events.filter((e) => e.type === 'surface/replace')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason)).toEqual(['completed', 'completed', 'completed']);
    const cassette = await harness(['replay', path, '--cassette', '--config', config], { home });
    expect(cassette.stdout).toContain('✓ turn 3 completed');
    expect(cassette.stdout).toContain('calls: 9 recorded, 9 served, 9 compared on the whole request, 0 diverged, 0 injected, 2/2 compaction summaries; tool results: 6 served, 0 re-run (6 recorded)');
    expect(cassette.stdout).toMatch(/^same every request, reply, tool result, approval and turn end matches the recording$/m);
    expect(cassette.code).toBe(0);
  });

  it('a session SIGKILLed (during a tool, or mid-reply) and resumed re-runs the same: the recorded interrupted turn matches', async () => {
    const config = writeProject(join(project.dir, 'killed'), {
      defaults: { provider: 'scripted', model: 'long-command' },
      plugins: [{ name: 'llm-scripted', config: { paceMs: 40, fragmentChars: 3 } }, { name: 'tools-workspace' }, { name: 'approvals' }],
      scripts: {
        'long-command': {
          replies: [{ when: { turn: 1, step: 1 }, reply: { text: 'Running it.', toolCalls: [{ name: 'exec_command', arguments: { command: 'sleep 4' } }] } }, { reply: { text: 'Resumed fine.' } }],
        },
        'long-reply': {
          replies: [
            { when: { turn: 1 }, reply: { text: 'This is a long reply that streams slowly, so that the process can be killed in the middle of it, word by word by word.' } },
            { reply: { text: 'Resumed fine.' } },
          ],
        },
      },
    });
    const workspace = join(project.dir, 'ws-killed');
    mkdirSync(workspace, { recursive: true });
    const variant = async (model: string, killWhen: (stdout: string) => boolean) => {
      const home = join(project.dir, `home-${model}`);
      const h = start(['run', 'Go.', '--config', config, '--cwd', workspace, '--model', model, '--provider', 'scripted', '--approve', 'allow-all'], { home });
      children.push(h.child);
      await h.waitFor(killWhen, `${model}: the moment to kill`);
      h.child.kill('SIGKILL');
      await h.exited;
      const path = join(home, 'sessions', filesOf(join(home, 'sessions')).find((name) => name.endsWith('.jsonl'))!);
      const resumed = await harness(['run', 'Again.', '--resume', path, '--config', config, '--approve', 'allow-all'], { home });
      expect(resumed.code).toBe(0);
      expect(resumed.stderr).toContain('synthetic event(s) closed an interrupted turn');
      const turnEnds = readEvents(path)
        .filter((e) => e.type === 'turn/end')
        .map((e) => e.data.reason);
      expect(turnEnds).toEqual(['interrupted', 'completed']);
      return harness(['replay', path, '--cassette', '--config', config, '--approve', 'allow-all'], { home });
    };
    const [duringTool, midReply] = await Promise.all([variant('long-command', (o) => o.includes('→ exec_command')), variant('long-reply', (o) => o.includes('streams slowly'))]);
    for (const cassette of [duringTool, midReply]) {
      expect(cassette.stdout).toContain('✓ turn 1 aborted (recorded: interrupted — stopped where the recording was cut)');
      expect(cassette.stdout).toContain('✓ turn 2 completed');
      expect(cassette.stdout).toMatch(/^same every request, reply, tool result, approval and turn end matches the recording$/m);
      expect(cassette.code).toBe(0);
    }
  });
});
