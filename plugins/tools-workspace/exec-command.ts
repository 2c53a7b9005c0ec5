/**
 * `exec_command`: runs `<shell> -c <command>` in the workspace root, in its own process group.
 * stdout and stderr are one stream (the shell's stderr is joined to its stdout, so their order is
 * kept) that goes out live through `context.output`; the close-out keeps the head under its cap and
 * the exit code outside it. When the command ends, on its own or because the signal fired (timeout,
 * user abort, the tool's own `timeout_ms`), the whole process group gets SIGTERM, then SIGKILL after
 * a grace period: nothing the command started outlives the call.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { defineTool, HarnessError, secrets, z, type StreamedToolOutput, type ToolDefinition, type ToolOutput } from '../../runtime/index.ts';
import type { WorkspaceToolsConfig } from './config.ts';
import { openWorkspace } from './paths.ts';

/**
 * The supervisor (`/bin/sh -c SUPERVISOR harness-exec <shell> <command>`): runs the command with an
 * empty stdin, and a watcher that blocks reading the harness's pipe (fd 3, a copy of stdin: a
 * background job's own stdin is /dev/null) and on EOF kills the process group (`kill 0`). When the
 * command ends, the watcher is stopped and the command's status passed on — a death by signal is
 * re-raised, so the harness sees the signal, not 128 + n.
 */
const SUPERVISOR = [
  'exec 3<&0',
  '"$1" -c "$2" </dev/null 3<&- &',
  'c=$!',
  '{ read -r _ <&3; kill -KILL 0; } </dev/null >/dev/null 2>&1 &',
  'w=$!',
  'exec 3<&- 0</dev/null >/dev/null 2>&1',
  'wait "$c"; s=$?',
  'kill "$w" 2>/dev/null',
  'if [ "$s" -gt 128 ] && [ "$s" -lt 160 ]; then kill -s "$(kill -l $((s - 128)))" $$; fi',
  'exit "$s"',
].join('\n');

export const execCommandInput = z.strictObject({
  command: z.string().min(1).describe('The shell command to run (bash syntax). Runs in the workspace root.'),
  timeout_ms: z.number().int().positive().optional().describe('Stop the command after this many milliseconds (default and maximum: the configured limit).'),
});

/**
 * Process groups of commands still running, across plugin generations: a call in flight outlives a
 * reload of the plugin (it ends under its own timeout or abort, like a prepared model call keeps its
 * adapter generation), but not the harness process — on exit, every group left is killed.
 */
const RUNNING_KEY = Symbol.for('harness.tools-workspace.running-groups');
type GlobalWithGroups = typeof globalThis & { [RUNNING_KEY]?: Set<ChildProcess> };

export function runningGroups(): Set<ChildProcess> {
  const holder = globalThis as GlobalWithGroups;
  let groups = holder[RUNNING_KEY];
  if (groups === undefined) {
    const created = new Set<ChildProcess>();
    groups = holder[RUNNING_KEY] = created;
    process.once('exit', () => {
      for (const child of created) signalGroup(child, 'SIGKILL');
    });
  }
  return groups;
}

export function execCommandTool(config: WorkspaceToolsConfig): ToolDefinition<z.output<typeof execCommandInput>> {
  const { shell, timeoutMs: limitMs, killGraceMs, env, inheritEnv, passEnv, vault } = config.exec;
  const running = runningGroups();
  const redactor = secrets();
  for (const [name, value] of Object.entries(vault)) redactor.add(value, name);
  return defineTool({
    name: 'exec_command',
    description:
      `Run a shell command (${shell} -c) in the workspace root and return its combined stdout and stderr, with the exit code. ` +
      `Times out after ${limitMs} ms (timeout_ms can shorten it). Not interactive: stdin is empty. ` +
      'Background processes it starts are stopped when the command ends.',
    input: execCommandInput,
    permission: 'write',
    // The close-out's timeout is the limit (its signal stops the group); timeout_ms only shortens it.
    timeoutMs: limitMs,
    maxOutputChars: config.maxOutputChars,
    async execute(input, context): Promise<ToolOutput | StreamedToolOutput> {
      const workspace = await openWorkspace(config.root, context.cwd);
      if (context.signal.aborted) throw context.signal.reason;
      const callTimeoutMs = Math.min(input.timeout_ms ?? limitMs, limitMs);
      // The shell runs under a tiny supervisor (the process group's leader) that holds a pipe from
      // the harness: if the harness dies — even by SIGKILL, when no exit hook runs — the pipe closes
      // and the supervisor kills the whole group, grandchildren included.
      const child = spawn('/bin/sh', ['-c', SUPERVISOR, 'harness-exec', shell, `exec 2>&1; ${input.command}`], {
        cwd: workspace.root,
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...(inheritEnv ? process.env : passedEnv(passEnv)), ...env, ...vault },
      });
      running.add(child);
      let outputCount = 0;
      const decoders = [new StringDecoder('utf8'), new StringDecoder('utf8')] as const;
      const emit = (text: string) => {
        if (text === '') return;
        outputCount += text.length;
        context.output(text);
      };
      child.stdout!.on('data', (chunk: Buffer) => emit(decoders[0].write(chunk)));
      child.stderr!.on('data', (chunk: Buffer) => emit(decoders[1].write(chunk)));

      let timedOut = false;
      let killTimer: NodeJS.Timeout | undefined;
      let stopping = false;
      /** SIGTERM to the whole group now, SIGKILL after the grace period unless all of it is gone. */
      const stopGroup = () => {
        if (stopping) return;
        stopping = true;
        signalGroup(child, 'SIGTERM');
        killTimer = setTimeout(() => signalGroup(child, 'SIGKILL'), killGraceMs);
      };
      const onAbort = () => stopGroup();
      context.signal.addEventListener('abort', onAbort, { once: true });
      const callTimer =
        callTimeoutMs < limitMs
          ? setTimeout(() => {
              timedOut = true;
              stopGroup();
            }, callTimeoutMs)
          : undefined;

      try {
        const result = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
          let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
          let closeTimer: NodeJS.Timeout | undefined;
          child.once('error', (error) => reject(error));
          child.once('exit', (code, signal) => {
            exit = { code, signal };
            // The shell is gone; whatever it left in its group (background jobs) is stopped, which
            // also closes the pipes they hold. If something escaped the group and keeps a pipe open,
            // stop waiting for it once SIGKILL has had time to land.
            stopGroup();
            closeTimer = setTimeout(() => {
              child.stdout?.destroy();
              child.stderr?.destroy();
              resolve(exit!);
            }, killGraceMs + 500);
          });
          child.once('close', () => {
            if (closeTimer !== undefined) clearTimeout(closeTimer);
            resolve(exit ?? { code: child.exitCode, signal: child.signalCode });
          });
        });
        emit(decoders[0].end());
        emit(decoders[1].end());
        if (context.signal.aborted) throw context.signal.reason;
        if (timedOut) throw new HarnessError('TIMEOUT', `The command timed out after ${callTimeoutMs} ms (timeout_ms); its process group was killed.`);
        const exitCode = result.code ?? 128 + (result.signal ? (constants.signals[result.signal] ?? 0) : 0);
        const notes = result.signal ? [`[the command was killed by ${result.signal}]`] : [];
        if (outputCount === 0) return { content: '(no output)', exitCode, isError: exitCode !== 0, notes };
        return { exitCode, isError: exitCode !== 0, notes };
      } catch (error) {
        if (HarnessError.is(error) || context.signal.aborted) throw error;
        throw new HarnessError('EXEC_FAILED', `Could not run ${shell}: ${(error as Error).message}`, { cause: error });
      } finally {
        if (callTimer !== undefined) clearTimeout(callTimer);
        context.signal.removeEventListener('abort', onAbort);
        // The group was signalled (or the shell never started); SIGKILL stays armed until everything
        // in the group is gone, and the group stays on the exit list until then.
        if (killTimer === undefined) running.delete(child);
        else {
          const timer = killTimer;
          void waitGroupGone(child, killGraceMs).then((gone) => {
            if (gone) clearTimeout(timer);
            running.delete(child);
          });
        }
      }
    },
  });
}

/** The variables of the harness's environment named in `names` (those that are set). */
function passedEnv(names: readonly string[]): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const name of names) if (process.env[name] !== undefined) out[name] = process.env[name];
  return out;
}

/** Signals every process of the child's group; false when the group no longer exists. */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals | 0): boolean {
  if (child.pid === undefined) return false;
  try {
    process.kill(-child.pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Polls (signal 0) until the group is empty, for at most `withinMs`. */
async function waitGroupGone(child: ChildProcess, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (!signalGroup(child, 0)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
