/**
 * Helpers for the workspace-tool tests: a real temp workspace (mkdtemp under os.tmpdir()), a harness
 * with plugins/tools-workspace loaded, and `call()` that runs a tool through the central close-out.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, type Harness, type ToolDefinition } from '../../runtime/index.ts';
import { runTool, type ToolOutcome } from '../../runtime/internal.ts';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const pluginModule = join(repoRoot, 'plugins', 'tools-workspace', 'index.ts');

export interface TempDir {
  /** Real path (symlinks such as /tmp → /private/tmp resolved). */
  readonly dir: string;
  write(name: string, content: string | Uint8Array): string;
  read(name: string): string;
  cleanup(): void;
}

export function tempDir(prefix: string): TempDir {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), `harness-${prefix}-`)));
  return {
    dir,
    write(name, content) {
      const path = join(dir, name);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
      return path;
    },
    read(name) {
      return readFileSync(join(dir, name), 'utf8');
    },
    cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A harness with tools-workspace loaded with `config`. */
export async function loadTools(config: Record<string, unknown> = {}): Promise<Harness> {
  return createHarness({ config: { plugins: [{ module: pluginModule, config }] } });
}

export interface CallOptions {
  readonly cwd: string;
  readonly signal?: AbortSignal;
  readonly outputs?: string[];
  readonly callId?: string;
}

/** Parses `args` with the tool's schema and runs it through `runTool`. */
export function call(harness: Harness, name: string, args: unknown, options: CallOptions): Promise<ToolOutcome> {
  const tool = harness.ctx.tools.require(name);
  return runWith(tool, tool.input.parse(args), options);
}

export function runWith(tool: ToolDefinition, input: unknown, options: CallOptions): Promise<ToolOutcome> {
  return runTool(tool, input, {
    callId: options.callId ?? 'call-1',
    sessionId: 'session-1',
    cwd: options.cwd,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.outputs ? { onOutput: (text: string) => options.outputs!.push(text) } : {}),
  });
}

/** The outcome's text blocks joined. */
export function text(outcome: ToolOutcome): string {
  return outcome.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('');
}

/**
 * Whether a process is still running. A zombie (state Z: dead, waiting for its parent to reap it —
 * PID 1 in some containers never does) counts as gone.
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}

/** Waits until `predicate` holds, polling, for at most `withinMs`; returns whether it held. */
export async function waitFor(predicate: () => boolean, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (predicate()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return predicate();
}
