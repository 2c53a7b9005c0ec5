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
 * reads is not an error). With no handler registered the process exits as soon as its output is
 * flushed (at most {@link STOP_FLUSH_MS}). A second signal exits after at most
 * {@link SECOND_STOP_FLUSH_MS} of flushing — once the wind-downs held with {@link holdExitUntil}
 * have settled (`harness serve`: its running turns journaled and their journals closed); a
 * wind-down that takes longer than {@link STOP_GRACE_MS} exits at once.
 *
 * Output: writes to a pipe are asynchronous in Node, so `process.exit()` right after a command would
 * drop whatever a slow reader has not taken yet (`harness replay --json | (sleep 1; jq …)`). Every
 * exit goes through {@link exitAfterFlush}: it waits until stdout and stderr have handed everything
 * to the OS — unbounded after a command that ended by itself (like `cat`, the writer waits for its
 * reader), bounded after a stop request so a reader that never reads cannot hold the process.
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

/** Longest wait for a reader to take the queued output after a stop request (SIGTERM, SIGHUP, EPIPE). */
export const STOP_FLUSH_MS = 2_000;

/** Longest wait for the queued output after a second stop request (a second signal, a second Ctrl-C). */
export const SECOND_STOP_FLUSH_MS = 250;

const handlers = new Set<(request: StopRequest) => void>();
/** The wind-downs a second stop request waits for before it exits (see {@link holdExitUntil}). */
const held = new Set<Promise<void>>();
let requested: StopRequest | undefined;
let installed = false;
/** The streams {@link exitAfterFlush} flushes (those of the installed Io). */
let streams: readonly NodeJS.WriteStream[] = [process.stdout, process.stderr];
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

/**
 * Waits until a long-running command (serve, view) should end: Ctrl-C resolves 130 (interrupted, as
 * the README's exit codes and `harness run` have it), a stop request its exit code (143 for SIGTERM, …).
 */
export function untilStopped(): Promise<number> {
  return new Promise<number>((done) => {
    const onSigint = (): void => {
      disposeStop();
      done(130);
    };
    process.once('SIGINT', onSigint);
    const disposeStop = onStop((request) => {
      process.off('SIGINT', onSigint);
      done(request.exitCode);
    });
  });
}

/**
 * Holds the exit of a second stop request until `windDown` settles: what must be on disk before the
 * process ends whatever else happens (a server's running turns, aborted and journaled; their
 * journals closed). Still bounded by {@link STOP_GRACE_MS} after the first request.
 */
export function holdExitUntil(windDown: Promise<unknown>): void {
  const settled = windDown.then(
    () => undefined,
    () => undefined,
  );
  held.add(settled);
  void settled.then(() => held.delete(settled));
}

/** Asks the running command to stop (see the module doc). */
export function requestStop(request: StopRequest): void {
  if (requested !== undefined) {
    // A second request: no more waiting for the command, a short one for the output — but not before
    // the held wind-downs settle (a journal cut off before its turn's end would lose the turn's close).
    if (request.cause === 'EPIPE') return;
    const code = requested.exitCode;
    if (held.size === 0) void exitAfterFlush(code, SECOND_STOP_FLUSH_MS);
    else void Promise.all(held).then(() => exitAfterFlush(code, SECOND_STOP_FLUSH_MS));
    return;
  }
  requested = request;
  if (handlers.size === 0) {
    void exitAfterFlush(request.exitCode, STOP_FLUSH_MS);
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

/**
 * Resolves once everything written to `stream` so far has been handed to the OS (the callback of a
 * last, empty write: write callbacks run in order), or once the stream failed or closed.
 */
export function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((done) => {
    if (stream.destroyed || stream.writableEnded || stream.writableLength === 0) return done();
    const finish = () => {
      stream.off('error', finish);
      stream.off('close', finish);
      done();
    };
    stream.once('error', finish);
    stream.once('close', finish);
    try {
      stream.write('', finish);
    } catch {
      finish();
    }
  });
}

/**
 * Exits once stdout and stderr are flushed ({@link flushed}), or after `boundMs` when given (a stop:
 * a reader that never reads must not hold the process). The code of the latest call wins (a signal
 * while the output drains exits 128 + n); it is set as `process.exitCode` at once, so whatever else
 * ends the process meanwhile ends it with that code.
 */
export async function exitAfterFlush(code: number, boundMs?: number): Promise<never> {
  process.exitCode = exitCode = code;
  let timer: NodeJS.Timeout | undefined;
  const bound = boundMs === undefined ? new Promise<void>(() => undefined) : new Promise<void>((done) => (timer = setTimeout(done, boundMs)));
  await Promise.race([Promise.all(streams.map(flushed)), bound]);
  clearTimeout(timer);
  process.exit(exitCode);
}
let exitCode = 0;

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
  streams = [io.out, io.err];
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
