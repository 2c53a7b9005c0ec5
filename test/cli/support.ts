/**
 * Helpers for the CLI tests: run `node bin/harness.js …` as a child process (asynchronously, so a
 * fixture server in the test process keeps serving), temporary folders, journal reading.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const bin = join(projectRoot, 'bin/harness.js');
export const dshRoot = resolve(projectRoot, '../shared/fixtures/dsh-sessions');

export interface Result {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** An environment without provider keys or a harness home of the developer's. */
export function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const key of Object.keys(env)) if (/_API_KEY$|_BASE_URL$|^HARNESS_|^VITEST|^FORCE_COLOR$|^NODE_OPTIONS$/.test(key)) delete env[key];
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

/** Runs a command to its end. */
export function run(command: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string; timeoutMs?: number } = {}): Promise<Result> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: options.cwd ?? projectRoot, env: options.env ?? cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 90_000);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** `node bin/harness.js …args` with a data dir of the test's. */
export function harness(args: readonly string[], options: { home: string; env?: Record<string, string | undefined>; cwd?: string; input?: string; timeoutMs?: number }): Promise<Result> {
  return run(process.execPath, [bin, ...args], { env: cleanEnv({ HARNESS_HOME: options.home, ...options.env }), ...(options.cwd ? { cwd: options.cwd } : {}), ...(options.input !== undefined ? { input: options.input } : {}), ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}) });
}

export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `harness-${prefix}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The journal path a `run` printed (`journal <path>`). */
export function journalOf(stdout: string): string {
  const match = /^journal (\S+\.jsonl)$/m.exec(stdout);
  if (!match) throw new Error(`no journal path in:\n${stdout}`);
  return match[1]!;
}

export function sessionIdOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1, -'.jsonl'.length);
}

/** Every event of a journal (line 1, the header, left out). */
export function readEvents(path: string): { seq: number; type: string; data: any }[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line));
}

export function journals(home: string): string[] {
  try {
    return readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'));
  } catch {
    return [];
  }
}
