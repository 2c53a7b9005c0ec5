/**
 * exec_command: streamed output, exit codes, and the process group killed on timeout, abort, the
 * end of the command and plugin unload — no orphan survives (checked on pids the command printed).
 */
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Harness } from '../../runtime/index.ts';
import { call, isRunning, loadTools, pluginModule, repoRoot, tempDir, text, waitFor, type TempDir } from './support.ts';

const execFileAsync = promisify(execFile);

let harness: Harness;
let ws: TempDir;
beforeAll(async () => {
  harness = await loadTools({ exec: { timeoutMs: 5000, killGraceMs: 300, env: { HARNESS_TEST_VAR: 'from-config' } } });
  ws = tempDir('exec');
});
afterAll(async () => {
  await harness.dispose();
  ws.cleanup();
});

const pidsIn = (outputs: readonly string[]) => (outputs.join('').match(/^pid:(\d+)$/gm) ?? []).map((line) => Number(line.slice(4)));

/** Resolves when the streamed output holds `count` "pid:N" lines. */
async function waitForPids(outputs: string[], count: number): Promise<number[]> {
  expect(await waitFor(() => pidsIn(outputs).length >= count, 5000)).toBe(true);
  return pidsIn(outputs);
}

describe('exec_command output', () => {
  it('streams output in pieces as it is produced, stdout and stderr interleaved in order', async () => {
    const outputs: string[] = [];
    const outcome = await call(harness, 'exec_command', { command: 'echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three' }, { cwd: ws.dir, outputs });
    expect(outputs).toEqual(['one\n', 'two\n', 'three\n']);
    expect(outcome.isError).toBe(false);
    expect(outcome.code).toBeUndefined();
    expect(text(outcome)).toBe('one\ntwo\nthree\n\n[exit code: 0]');
  });

  it('keeps the order of quickly alternating stdout and stderr', async () => {
    const outcome = await call(harness, 'exec_command', { command: 'for i in 1 2 3; do echo out$i; echo err$i >&2; done' }, { cwd: ws.dir });
    expect(text(outcome)).toBe('out1\nerr1\nout2\nerr2\nout3\nerr3\n\n[exit code: 0]');
  });

  it('a non-zero exit is an error result with the exit code visible', async () => {
    const outcome = await call(harness, 'exec_command', { command: 'echo partial; echo oops >&2; exit 7' }, { cwd: ws.dir });
    expect(outcome.isError).toBe(true);
    expect(outcome.code).toBe('TOOL_REPORTED_ERROR');
    expect(text(outcome)).toBe('partial\noops\n\n[exit code: 7]');
  });

  it('says when there is no output', async () => {
    expect(text(await call(harness, 'exec_command', { command: 'true' }, { cwd: ws.dir }))).toBe('(no output)\n[exit code: 0]');
  });

  it('decodes a UTF-8 character split across two writes', async () => {
    const outcome = await call(harness, 'exec_command', { command: "printf '\\xe2'; sleep 0.1; printf '\\x98\\x95\\n'" }, { cwd: ws.dir });
    expect(text(outcome)).toBe('☕\n\n[exit code: 0]');
  });

  it('runs in the workspace root with the configured environment, stdin empty', async () => {
    const outcome = await call(harness, 'exec_command', { command: 'pwd; echo "$HARNESS_TEST_VAR"; cat; echo done' }, { cwd: ws.dir });
    expect(text(outcome)).toBe(`${ws.dir}\nfrom-config\ndone\n\n[exit code: 0]`);
  });

  it('reports a command killed by a signal', async () => {
    const outcome = await call(harness, 'exec_command', { command: 'kill -TERM $$' }, { cwd: ws.dir });
    expect(outcome.isError).toBe(true);
    expect(text(outcome)).toBe('(no output)\n[the command was killed by SIGTERM]\n[exit code: 143]');
  });
});

describe('exec_command process group', () => {
  it('the close-out timeout kills the whole group: no orphan survives', async () => {
    const short = await loadTools({ exec: { timeoutMs: 400, killGraceMs: 300 } });
    try {
      const outputs: string[] = [];
      const startedAtMs = Date.now();
      const outcome = await call(short, 'exec_command', { command: 'echo pid:$$; sleep 1000 & echo pid:$!; (sleep 1000; echo never) & echo pid:$!; wait' }, { cwd: ws.dir, outputs });
      expect(Date.now() - startedAtMs).toBeLessThan(2000);
      expect(outcome.isError).toBe(true);
      expect(outcome.code).toBe('TIMEOUT');
      const pids = pidsIn(outputs);
      expect(pids).toHaveLength(3);
      expect(text(outcome)).toBe(`${outputs.join('')}\n[The tool call timed out after 400 ms and was stopped.]`);
      expect(await waitFor(() => pids.every((pid) => !isRunning(pid)), 3000)).toBe(true);
    } finally {
      await short.dispose();
    }
  });

  it('a child that ignores SIGTERM gets SIGKILL after the grace period', async () => {
    const short = await loadTools({ exec: { timeoutMs: 300, killGraceMs: 1500 } });
    try {
      const outputs: string[] = [];
      const outcome = await call(short, 'exec_command', { command: "(trap '' TERM; exec sleep 1000) & echo pid:$!; wait" }, { cwd: ws.dir, outputs });
      expect(outcome.code).toBe('TIMEOUT');
      const [pid] = pidsIn(outputs);
      expect(isRunning(pid!)).toBe(true); // SIGTERM is ignored…
      expect(await waitFor(() => !isRunning(pid!), 3000)).toBe(true); // …SIGKILL is not
    } finally {
      await short.dispose();
    }
  });

  it('timeout_ms shortens the timeout for one call', async () => {
    const outputs: string[] = [];
    const startedAtMs = Date.now();
    const outcome = await call(harness, 'exec_command', { command: 'echo pid:$$; sleep 1000', timeout_ms: 300 }, { cwd: ws.dir, outputs });
    expect(Date.now() - startedAtMs).toBeLessThan(2000);
    expect(outcome.code).toBe('TIMEOUT');
    const [pid] = pidsIn(outputs);
    expect(text(outcome)).toBe(`pid:${pid}\n\n[The tool failed: The command timed out after 300 ms (timeout_ms); its process group was killed.]`);
    expect(await waitFor(() => !isRunning(pid!), 3000)).toBe(true);
  });

  it('a user abort kills the whole group, promptly', async () => {
    const outputs: string[] = [];
    const controller = new AbortController();
    const pending = call(harness, 'exec_command', { command: 'echo pid:$$; sleep 1000 & echo pid:$!; wait' }, { cwd: ws.dir, outputs, signal: controller.signal });
    const pids = await waitForPids(outputs, 2);
    const abortedAtMs = Date.now();
    controller.abort();
    const outcome = await pending;
    expect(Date.now() - abortedAtMs).toBeLessThan(500);
    expect(outcome.code).toBe('ABORTED');
    expect(text(outcome)).toBe(`${outputs.join('')}\n[The user aborted this tool call.]`);
    expect(await waitFor(() => pids.every((pid) => !isRunning(pid)), 3000)).toBe(true);
  });

  it('background jobs left behind when the command ends are stopped, and the call does not wait for them', async () => {
    const outputs: string[] = [];
    const startedAtMs = Date.now();
    const outcome = await call(harness, 'exec_command', { command: 'sleep 1000 & echo pid:$!; echo finished' }, { cwd: ws.dir, outputs });
    expect(Date.now() - startedAtMs).toBeLessThan(2000);
    const [pid] = pidsIn(outputs);
    expect(text(outcome)).toBe(`pid:${pid}\nfinished\n\n[exit code: 0]`);
    expect(await waitFor(() => !isRunning(pid!), 3000)).toBe(true);
  });

  it('a command in flight survives an unload of the plugin and still answers', async () => {
    const own = await loadTools();
    const outputs: string[] = [];
    const pending = call(own, 'exec_command', { command: 'echo pid:$$; sleep 0.3; echo done' }, { cwd: ws.dir, outputs });
    await waitForPids(outputs, 1);
    await own.dispose();
    expect(own.ctx.tools.has('exec_command')).toBe(false);
    const outcome = await pending;
    expect(text(outcome)).toBe(
      `${pidsIn(outputs)
        .map((pid) => `pid:${pid}\n`)
        .join('')}done\n\n[exit code: 0]`,
    );
  });

  it('commands still running when the harness process exits are killed with it', async () => {
    const script = ws.write(
      'exit-script.mts',
      [
        `import { createHarness } from ${JSON.stringify(join(repoRoot, 'runtime', 'index.ts'))};`,
        `import { runTool } from ${JSON.stringify(join(repoRoot, 'runtime', 'internal.ts'))};`,
        `const harness = await createHarness({ config: { plugins: [{ module: ${JSON.stringify(pluginModule)}, config: {} }] } });`,
        `const tool = harness.ctx.tools.require('exec_command');`,
        `void runTool(tool, { command: 'sleep 1000 & echo pid:$!; wait' }, { callId: 'c', sessionId: 's', cwd: ${JSON.stringify(ws.dir)}, onOutput: (text) => {`,
        `  process.stdout.write(text);`,
        `  process.exit(0);`,
        `} });`,
      ].join('\n'),
    );
    const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', script], { cwd: repoRoot });
    const [pid] = pidsIn([stdout]);
    expect(pid).toBeGreaterThan(0);
    expect(await waitFor(() => !isRunning(pid!), 3000)).toBe(true);
  });

  it('commands of a harness killed with SIGKILL die too (their supervisor sees the pipe close), within a bounded wait', async () => {
    const script = ws.write(
      'kill-script.mts',
      [
        `import { createHarness } from ${JSON.stringify(join(repoRoot, 'runtime', 'index.ts'))};`,
        `import { runTool } from ${JSON.stringify(join(repoRoot, 'runtime', 'internal.ts'))};`,
        `const harness = await createHarness({ config: { plugins: [{ module: ${JSON.stringify(pluginModule)}, config: {} }] } });`,
        `const tool = harness.ctx.tools.require('exec_command');`,
        `let seen = '';`,
        // A command and a grandchild that keep writing into the workspace.
        `void runTool(tool, { command: 'sh -c "while :; do date > tick.txt; sleep 0.1; done" & echo pid:$!; echo pid:$$; sleep 1000' }, { callId: 'c', sessionId: 's', cwd: ${JSON.stringify(ws.dir)}, onOutput: (text) => {`,
        `  process.stdout.write(text);`,
        `  seen += text;`,
        `  if ((seen.match(/pid:/g) ?? []).length >= 2) setTimeout(() => process.kill(process.pid, 'SIGKILL'), 100);`,
        `} });`,
      ].join('\n'),
    );
    const stdout = await new Promise<string>((resolve) => {
      let out = '';
      const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
      child.stdout.on('data', (d) => (out += String(d)));
      child.on('exit', () => resolve(out));
    });
    const pids = pidsIn([stdout]);
    expect(pids.length).toBe(2);
    expect(await waitFor(() => pids.every((pid) => !isRunning(pid)), 5000), `still running: ${pids.filter(isRunning).join(', ')}`).toBe(true);
  });

  it("by default a command gets a clean environment: the passEnv allow-list and env, never the harness's API keys", async () => {
    process.env.HARNESS_TOOLS_TEST_SECRET = 'inherited';
    process.env.OPENAI_API_KEY = 'sk-exec-test-sentinel-0001';
    const inherit = await loadTools({ exec: { inheritEnv: true, env: { ONLY: 'this' } } });
    try {
      const command = 'echo "${HARNESS_TOOLS_TEST_SECRET:-unset} ${OPENAI_API_KEY:-nokey} $HARNESS_TEST_VAR PATH=${PATH:+set} HOME=${HOME:+set}"';
      expect(text(await call(harness, 'exec_command', { command }, { cwd: ws.dir }))).toBe('unset nokey from-config PATH=set HOME=set\n\n[exit code: 0]');
      expect(
        text(await call(harness, 'exec_command', { command: 'env | cut -d= -f1 | sort' }, { cwd: ws.dir }))
          .split('\n')
          .filter((l) => /^[A-Z_]+$/.test(l) && l !== 'PWD' && l !== 'SHLVL' && l !== '_')
          .every((name) =>
            [
              'HARNESS_TEST_VAR',
              'PATH',
              'HOME',
              'USER',
              'LOGNAME',
              'SHELL',
              'LANG',
              'LANGUAGE',
              'LC_ALL',
              'LC_CTYPE',
              'LC_MESSAGES',
              'TERM',
              'COLORTERM',
              'NO_COLOR',
              'TZ',
              'TMPDIR',
              'OLDPWD',
            ].includes(name),
          ),
      ).toBe(true);
      // inheritEnv: true opts into the whole environment.
      expect(text(await call(inherit, 'exec_command', { command: 'echo "${HARNESS_TOOLS_TEST_SECRET:-unset} $ONLY"' }, { cwd: ws.dir }))).toBe('inherited this\n\n[exit code: 0]');
    } finally {
      delete process.env.HARNESS_TOOLS_TEST_SECRET;
      delete process.env.OPENAI_API_KEY;
      await inherit.dispose();
    }
  });

  it('vault variables reach the command and are masked in its result', async () => {
    const vaulted = await loadTools({ exec: { vault: { DEPLOY_TOKEN: 'vault-sentinel-4711-abcdef' } } });
    try {
      const result = text(await call(vaulted, 'exec_command', { command: 'echo "token=$DEPLOY_TOKEN len=${#DEPLOY_TOKEN}"' }, { cwd: ws.dir }));
      expect(result).toContain('len=26');
      expect(result).not.toContain('vault-sentinel-4711-abcdef');
    } finally {
      await vaulted.dispose();
    }
  });
});
