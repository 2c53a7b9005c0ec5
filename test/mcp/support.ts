/**
 * Real MCP servers for the tests (test/mcp/servers/, built with the official SDK's server side):
 * the stdio one as a config entry the plugin spawns, the Streamable HTTP one as a child process on
 * 127.0.0.1 that the test starts and stops.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STDIO_SERVER = fileURLToPath(new URL('servers/stdio-server.ts', import.meta.url));
const HTTP_SERVER = fileURLToPath(new URL('servers/http-server.ts', import.meta.url));

/** A folder for a test's state files, removed by `remove()`. */
export function tempDir(): { dir: string; file(name: string): string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'harness-mcp-'));
  return { dir, file: (name) => join(dir, name), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The plugin's config entry for the stdio demo server; it records what it does in `stateFile`. Its
 * connect timeout is generous: on a loaded CI machine a tsx process can take seconds to start (it is
 * a bound, not a wait).
 */
export function stdioServer(name: string, stateFile?: string, extra: Record<string, unknown> = {}) {
  return {
    name,
    transport: 'stdio' as const,
    command: process.execPath,
    args: ['--import', 'tsx', STDIO_SERVER],
    ...(stateFile ? { env: { MCP_STATE_FILE: stateFile } } : {}),
    cwd: REPO_ROOT,
    connectTimeoutMs: 60_000,
    ...extra,
  };
}

/** The lines of a state file ([] before it exists). */
export function stateLines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Polls until `check` is true; fails after `timeoutMs` naming `what`. */
export async function waitFor(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export interface HttpServer {
  readonly url: string;
  readonly port: number;
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the Streamable HTTP demo server on 127.0.0.1 (`port` 0: any free one). */
export async function startHttpServer(options: { port?: number; env?: Record<string, string> } = {}): Promise<HttpServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', HTTP_SERVER, String(options.port ?? 0)], { cwd: REPO_ROOT, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) resolve((JSON.parse(line) as { port: number }).port);
    });
    child.once('exit', (code) => reject(new Error(`the HTTP MCP server exited (${code}) before listening`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    process: child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** True while a process with this id runs. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
