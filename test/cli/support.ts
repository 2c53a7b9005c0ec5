/**
 * Helpers for the CLI tests: run `node bin/harness.js …` as a child process (asynchronously, so a
 * fixture server in the test process keeps serving), temporary folders, journal reading.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fixturesDir } from '../support/fixture-server.ts';

export const projectRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const bin = join(projectRoot, 'bin/harness.js');
/** The DeepSeek Harness journals of the shared fixtures (`$HARNESS_FIXTURES_DIR`, else `../shared/fixtures`). */
export const dshRoot = join(fixturesDir, 'dsh-sessions');

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
  return run(process.execPath, [bin, ...args], {
    env: cleanEnv({ HARNESS_HOME: options.home, ...options.env }),
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.input !== undefined ? { input: options.input } : {}),
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
  });
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

/** The module path of a plugin of this repository. */
export function pluginModule(name: string): string {
  return join(projectRoot, 'plugins', name, 'index.ts');
}

export interface ProjectSpec {
  readonly defaults?: { provider: string; model: string };
  /** Plugins of this repository, by folder name, with their config; `module` for one of the project's own. */
  readonly plugins: readonly { name: string; module?: string; config?: unknown }[];
  /** Scripts for the scripted model: model id → JSON script (written next to the config). */
  readonly scripts?: Record<string, unknown>;
  /** Other keys of the config (e.g. `dataDir`). */
  readonly extra?: Record<string, unknown>;
}

/**
 * Writes a harness config (and the scripted model's scripts) into `dir`; returns the config's path.
 * `llm-scripted` gets a `scripts` entry for each script unless its config names its own.
 */
export function writeProject(dir: string, spec: ProjectSpec, file = 'harness.config.ts'): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const scripts: Record<string, string> = {};
  for (const [model, script] of Object.entries(spec.scripts ?? {})) {
    writeFileSync(join(dir, `${model}.json`), JSON.stringify(script, null, 2));
    scripts[model] = `./${model}.json`;
  }
  const plugins = spec.plugins.map(({ name, module, config }) => {
    const withScripts = name === 'llm-scripted' && Object.keys(scripts).length ? { scripts, ...((config as object | undefined) ?? {}) } : config;
    return { module: module ?? pluginModule(name), ...(withScripts === undefined ? {} : { config: withScripts }) };
  });
  const config = { ...(spec.extra ?? {}), ...(spec.defaults ? { defaults: spec.defaults } : {}), plugins };
  const path = join(dir, file);
  writeFileSync(path, `export default ${JSON.stringify(config, null, 2)};\n`);
  return path;
}

/**
 * A project for stopping a turn while its tool runs: the scripted model `sleeper` (the default)
 * runs `echo started; sleep 25`, and a plugin holds an aborted call's close-out for 1.5 s (as the
 * subagents plugin does until a child's turn ended), so a second stop signal 300 ms after the first
 * always lands before the turn is journaled. Returns the config's path.
 */
export function writeSlowCloseProject(dir: string): string {
  const config = writeProject(dir, {
    defaults: { provider: 'scripted', model: 'sleeper' },
    plugins: [{ name: 'llm-scripted' }, { name: 'tools-workspace' }, { name: 'approvals' }, { name: 'slow-close', module: './slow-close.ts' }],
    scripts: {
      sleeper: {
        replies: [{ when: { step: 1 }, reply: { text: 'Running it.', toolCalls: [{ name: 'exec_command', arguments: { command: 'echo started; sleep 25' } }] } }, { reply: { text: 'Done.' } }],
      },
    },
  });
  writeFileSync(
    join(dir, 'slow-close.ts'),
    `import { definePlugin } from ${JSON.stringify(join(projectRoot, 'runtime/index.ts'))};
export default definePlugin({
  name: 'slow-close',
  setup(ctx) {
    ctx.on('tools/execute', async (payload, next) => {
      const outcome = await next(payload);
      if (payload.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 1500));
      return outcome;
    });
  },
});
`,
  );
  return config;
}

/** Starts `node bin/harness.js …args` and hands back the child with its output so far. */
export function start(
  args: readonly string[],
  options: { home: string; env?: Record<string, string | undefined>; cwd?: string },
): {
  child: ChildProcessWithoutNullStreams;
  out: () => string;
  err: () => string;
  exited: Promise<number | null>;
  /** Resolves once stdout matches `test`. */
  waitFor: (test: (stdout: string) => boolean, what: string, timeoutMs?: number) => Promise<string>;
} {
  const child = spawn(process.execPath, [bin, ...args], { cwd: options.cwd ?? projectRoot, env: cleanEnv({ HARNESS_HOME: options.home, ...options.env }) });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  const waitFor = async (test: (text: string) => boolean, what: string, timeoutMs = 60_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (test(stdout)) return stdout;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`timed out waiting for ${what}; stdout:\n${stdout}\nstderr:\n${stderr}`);
  };
  return { child, out: () => stdout, err: () => stderr, exited, waitFor };
}

/** Files of a directory (none when it does not exist). */
export function filesOf(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
