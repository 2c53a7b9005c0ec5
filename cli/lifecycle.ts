/**
 * How the process ends when something outside the command ends it: SIGTERM and SIGHUP, and a reader
 * that went away (`harness sessions | head -3`: EPIPE on stdout or stderr).
 *
 * A command that holds something (a journal with its writer lock, a running turn, `exec_command`
 * process groups) registers a {@link onStop} handler for as long as it holds it. On a stop request
 * every handler is called once — for a turn that is what the first Ctrl-C does: abort the turn, so
 * the close-out stops its tools (their process groups included) and the turn is journaled `aborted`
 * — and the command winds down and closes its journal; the process then exits with the stop's code:
 * 128 + the signal's number (143 for SIGTERM, 129 for SIGHUP), or 0 for a closed pipe (output nobody
 * reads is not an error). With no handler registered the process exits at once. A second signal,
 * or a wind-down that takes longer than {@link STOP_GRACE_MS}, exits at once.
 *
 * After EPIPE the stream's writes are dropped silently, so nothing else fails on it.
 */
import { constants } from 'node:os';
import type { Io } from './env.ts';

export interface StopRequest {
  /** `SIGTERM`, `SIGHUP`, or `EPIPE` (a closed stdout / stderr). */
  readonly cause: 'SIGTERM' | 'SIGHUP' | 'EPIPE';
  /** What the process exits with. */
  readonly exitCode: number;
  /** For messages: "SIGTERM", "the output pipe was closed". */
  readonly label: string;
}

/** Longest wind-down before the process exits anyway (the close-out's SIGTERM→SIGKILL grace is 2 s). */
export const STOP_GRACE_MS = 10_000;

const handlers = new Set<(request: StopRequest) => void>();
let requested: StopRequest | undefined;
let installed = false;
const silenced = new WeakSet<NodeJS.WriteStream>();

/** The stop that was requested, if one was. */
export function stopRequested(): StopRequest | undefined {
  return requested;
}

/**
 * Registers what to do on a stop request while the command holds something; returns the disposer.
 * A handler registered after the request is called at once.
 */
export function onStop(handler: (request: StopRequest) => void): () => void {
  if (requested !== undefined) {
    handler(requested);
    return () => undefined;
  }
  handlers.add(handler);
  return () => handlers.delete(handler);
}

/** Asks the running command to stop (see the module doc). */
export function requestStop(request: StopRequest): void {
  if (requested !== undefined) {
    // A second request: no more waiting.
    if (request.cause !== 'EPIPE') process.exit(requested.exitCode);
    return;
  }
  requested = request;
  if (handlers.size === 0) {
    process.exit(request.exitCode);
    return;
  }
  setTimeout(() => process.exit(request.exitCode), STOP_GRACE_MS).unref();
  for (const handler of [...handlers]) {
    try {
      handler(request);
    } catch {
      // one handler failing must not keep the others from running
    }
  }
}

/** Drops every later write to `stream` (its reader is gone). */
function silence(stream: NodeJS.WriteStream): void {
  if (silenced.has(stream)) return;
  silenced.add(stream);
  const drop = (_chunk: unknown, encoding?: unknown, callback?: unknown): boolean => {
    const done = typeof encoding === 'function' ? encoding : typeof callback === 'function' ? callback : undefined;
    if (done) queueMicrotask(() => (done as () => void)());
    return true;
  };
  Object.defineProperty(stream, 'write', { value: drop, configurable: true, writable: true });
}

/** True once `stream`'s writes are dropped. */
export function isSilenced(stream: NodeJS.WriteStream): boolean {
  return silenced.has(stream);
}

/** Installs the SIGTERM / SIGHUP handlers and the EPIPE handling of `io`'s streams (once per process). */
export function installProcessHandlers(io: Io): void {
  if (installed) return;
  installed = true;
  for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => requestStop({ cause: signal, exitCode: 128 + (constants.signals[signal] ?? 0), label: signal }));
  }
  for (const stream of [io.out, io.err]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      // The reader is gone (EPIPE), or the terminal is (EIO after a hang-up): stop writing there.
      silence(stream);
      if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') requestStop({ cause: 'EPIPE', exitCode: 0, label: 'the output pipe was closed' });
    });
  }
}
