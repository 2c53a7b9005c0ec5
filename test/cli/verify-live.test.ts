/**
 * `replay X --verify` on a journal another process is writing said `damaged … turn 1 never ended
 * (… or is still running)`, exit 1, though the lock showed a live writer. Now: `being written` with
 * the writer's pid, exit 0; once that writer is dead (SIGKILL: its lock stale) the same open turn is
 * damage again. And `replay nosuch --verify` is the plain not-found error, not `damaged … ✗
 * JOURNAL_NOT_FOUND`.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { filesOf, harness, start, tempDir, writeProject } from './support.ts';

const project = tempDir('verify-live');
const children: { kill: (signal: NodeJS.Signals) => boolean }[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  project.cleanup();
});

const config = writeProject(join(project.dir, 'project'), {
  defaults: { provider: 'scripted', model: 'sleeper' },
  plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }],
  scripts: {
    sleeper: { replies: [{ when: { step: 1 }, reply: { text: 'Running it.', toolCalls: [{ name: 'exec_command', arguments: { command: 'sleep 10' } }] } }, { reply: { text: 'Done.' } }] },
  },
});

describe('replay --verify', { timeout: 120_000 }, () => {
  it('says a journal with a live writer is being written (exit 0), and damaged once the writer is dead', async () => {
    const home = join(project.dir, 'home');
    const workspace = join(project.dir, 'ws');
    mkdirSync(workspace, { recursive: true });
    const h = start(['run', 'Sleep, please.', '--config', config, '--cwd', workspace, '--approve', 'allow-all'], { home });
    children.push(h.child);
    await h.waitFor((o) => o.includes('→ exec_command'), 'the tool call');
    const name = filesOf(join(home, 'sessions')).find((file) => file.endsWith('.jsonl'))!;
    const path = join(home, 'sessions', name);

    const live = await harness(['replay', path, '--verify', '--config', config], { home });
    expect(live.stdout).toContain(`being written ${path} (by pid ${h.child.pid}, which holds its lock)`);
    expect(live.stdout).toContain('turn 1 is running: verify again once it ends');
    expect(live.stdout).not.toContain('damaged');
    expect(live.code).toBe(0);

    h.child.kill('SIGKILL');
    await h.exited;
    const dead = await harness(['replay', path, '--verify', '--config', config], { home });
    expect(dead.code).toBe(1);
    expect(dead.stdout).toContain(`damaged ${path}\n`);
    expect(dead.stdout).toContain('turn 1 never ended (the session crashed); resuming it closes the turn');
  });

  it('replay nosuch --verify is the plain not-found error', async () => {
    const home = join(project.dir, 'home-empty');
    const [verify, plain] = await Promise.all([harness(['replay', 'nosuch', '--verify', '--config', config], { home }), harness(['replay', 'nosuch', '--config', config], { home })]);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toBe('');
    expect(verify.stderr).toMatch(/^error JOURNAL_NOT_FOUND: /);
    expect(verify.stderr).toBe(plain.stderr);
  });
});
