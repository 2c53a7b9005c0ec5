/**
 * `harness serve` stopped from outside while a turn runs a tool: the turn is aborted and journaled
 * (tool/result ABORTED, turn/end aborted, the journal closed and its lock released) before the
 * process exits — also when the signal comes twice, as a closed terminal (the kernel's SIGHUP and the
 * shell's) or a supervisor signalling the process and then its group delivers it. The second signal
 * used to exit at once, cutting the journal off at the tool's output ("turn 1 never ended"). A
 * plugin here holds the aborted call's close-out for a moment (as the subagents plugin does until a
 * child's turn ended), so the second signal always lands before the turn is journaled.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, bin, harness, projectRoot, readEvents, tempDir, writeSlowCloseProject } from '../cli/support.ts';

const project = tempDir('serve-stop');
const children: { kill: (signal: NodeJS.Signals) => boolean }[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  project.cleanup();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TOKEN = 'a-serve-token-for-the-stop-test';

const config = writeSlowCloseProject(join(project.dir, 'project'));

/** Starts serve, runs the sleeper's turn until its command printed, and hands back the process. */
async function serveWithRunningTool(name: string) {
  const home = join(project.dir, `home-${name}`);
  const workspace = join(project.dir, `ws-${name}`);
  mkdirSync(workspace, { recursive: true });
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--config', config, '--cwd', workspace], {
    env: cleanEnv({ HARNESS_HOME: home, HARNESS_SERVE_TOKEN: TOKEN }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    void exited.then((code) => reject(new Error(`exited ${code}: ${err}`)));
  });
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const id = ((await (await fetch(`${url}/v1/sessions`, { method: 'POST', headers, body: '{}' })).json()) as { session: { id: string } }).session.id;
  const submitted = await fetch(`${url}/v1/sessions/${id}/turns`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'go', model: 'sleeper', approve: 'allow-all' }) });
  expect(submitted.status).toBe(202);
  // The command runs once its output is journaled.
  for (let i = 0; ; i++) {
    const { events } = (await (await fetch(`${url}/v1/sessions/${id}/events`, { headers })).json()) as { events: { type: string }[] };
    if (events.some((event) => event.type === 'tool/output')) break;
    if (i > 200) throw new Error(`the command never printed: ${JSON.stringify(events.map((e) => e.type))}`);
    await sleep(50);
  }
  return { child, exited, home, id, err: () => err };
}

describe('harness serve stopped while a tool runs', { timeout: 60_000 }, () => {
  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    it(`${signal} twice: the turn is journaled aborted before the process exits ${code}`, async () => {
      const served = await serveWithRunningTool(signal);
      served.child.kill(signal);
      await sleep(300);
      served.child.kill(signal);
      expect(await served.exited).toBe(code);
      const path = join(served.home, 'sessions', `${served.id}.jsonl`);
      const events = readEvents(path);
      expect(events.find((e) => e.type === 'tool/result')?.data.code).toBe('ABORTED');
      expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'aborted' } });
      expect(existsSync(`${path}.lock`)).toBe(false);
      const verify = await harness(['replay', served.id, '--verify', '--config', config], { home: served.home });
      expect(verify.stdout + verify.stderr).not.toContain('never ended');
      expect(verify.code).toBe(0);
    });
  }

  it('Ctrl-C (SIGINT): the turn is journaled aborted and the process exits 130, as the README says', async () => {
    const served = await serveWithRunningTool('SIGINT');
    served.child.kill('SIGINT');
    expect(await served.exited).toBe(130);
    const path = join(served.home, 'sessions', `${served.id}.jsonl`);
    expect(readEvents(path).at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'aborted' } });
    expect(existsSync(`${path}.lock`)).toBe(false);
    const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    expect(readme).toContain('130 interrupted (Ctrl-C)');
  });
});
