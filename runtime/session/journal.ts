/**
 * The JSONL journal store (DESIGN "Sessions and the journal", "Durability").
 *
 * `<dataDir>/sessions/<sessionId>.jsonl`: line 1 the `SessionHeader`, then one event per line
 * `{"seq","type","atMs","data"}` (+ `"ignorable":true`). Records are never rewritten; the one
 * sanctioned cut is a torn last line, and only after its bytes are safely in a sidecar file.
 *
 * Appending is on the per-chunk hot path: `append` validates (lossless JSON, an iterative walk),
 * assigns `seq`/`atMs`, deep-freezes, folds (no immer for chunks) and queues the frozen event — no
 * serialisation, no write and no fsync: the lines are made when the queue is written, in one warm
 * loop per write instead of one cold `JSON.stringify` per chunk. A background flush writes the
 * queue: on the next turn of the event loop after a quiet spell, then at most once per
 * `flushIntervalMs` (100 ms) while appends keep coming — a stream's chunks share a write instead of
 * one write each — or at once when about 64 KiB are queued; `checkpoint()` writes everything queued
 * and fsyncs.
 * The loop checkpoints before a model call is dispatched, before a tool body runs and at turn end:
 * a crash loses at most what was appended since the last checkpoint, and at most the last line is
 * torn.
 */
import { randomUUID } from 'node:crypto';
import {
  closeSync,
  constants as fsConstants,
  existsSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  statSync,
  writeSync,
  ftruncateSync,
  linkSync,
  unlinkSync,
  write as fsWrite,
  fsync as fsFsync,
} from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { HookBus } from '../kernel/bus.ts';
import { HarnessError } from '../kernel/errors.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import { secrets } from '../kernel/secrets.ts';
import type { AnySessionEvent, SessionEvent, SessionEventMap, SessionEventType, SessionHeader } from './events.ts';
import { initialState, reduceEvent } from './fold.ts';
import { assertLosslessJson } from './json.ts';
import { acquireLock, releaseLock } from './lock.ts';
import { assertSessionId, journalPath, lockPathOf, resolveSessionPath } from './paths.ts';
import { JOURNAL_FORMAT_VERSION, scanJournal, type SkippedLine } from './reader.ts';
import { isIgnorableByDefault } from './registry.ts';
import { planRepair } from './repair.ts';
import type { AppendOptions, RepairReport, SessionJournal, SessionState } from './types.ts';

/** Stream chunks that only carry model output (not redacted: see `append`). */
const DELTA_CHUNKS = new Set(['text-delta', 'reasoning-delta', 'tool-call-delta']);

/** Flush at once when this much is queued. */
const FLUSH_BYTES = 64 * 1024;
/**
 * What a queued event counts towards `flushBytes` before it is serialised (a stream chunk record is
 * 150–200 bytes); raw lines count their length.
 */
const QUEUED_EVENT_BYTES = 160;
/** The least time between two background writes (while appends keep coming), ms. */
const FLUSH_INTERVAL_MS = 100;

export interface JournalIoOptions {
  /** Delivers every appended event on the `session/event` sink. */
  readonly bus?: HookBus;
  /**
   * Background flush delay in ms. 0 (default): the next turn of the event loop, but at most one
   * background write per `flushIntervalMs`.
   */
  readonly flushDelayMs?: number;
  /** With `flushDelayMs` 0: the least time between two background writes, in ms (default 100). */
  readonly flushIntervalMs?: number;
  /** Flush at once when about this many bytes are queued (default 64 KiB; an unserialised event counts 160). */
  readonly flushBytes?: number;
  /** The clock for `atMs` (default `Date.now`). */
  readonly now?: () => number;
}

export interface CreateJournalOptions extends JournalIoOptions {
  /** Default: `$HARNESS_HOME`, else `~/.harness`. */
  readonly dataDir?: string;
  /** Default: a random UUID. */
  readonly id?: string;
  readonly cwd?: string;
  /** The session this one was forked from, and the seq it was forked at. */
  readonly parent?: SessionHeader['parent'];
  readonly importedFrom?: SessionHeader['importedFrom'];
  readonly createdAtMs?: number;
}

export interface OpenJournalOptions extends JournalIoOptions {
  readonly dataDir?: string;
  /**
   * Read-only salvage: skip corrupt lines (reported in `repairs.skippedLines`) instead of failing.
   * Nothing is locked, moved, repaired or written; the journal refuses `append`.
   */
  readonly salvage?: boolean;
}

export interface OpenedJournal {
  readonly journal: SessionJournal;
  readonly repairs: RepairReport;
}

const openJournals = new Set<FileJournal>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A process that exits without closing its journals: write what is queued (when no write is in
  // flight, so lines cannot interleave) and release the locks. `close()` is still the contract.
  process.on('exit', () => {
    for (const journal of openJournals) journal.closeSyncOnExit();
  });
}

/** One writable journal file. */
export class FileJournal implements SessionJournal {
  readonly id: string;
  readonly path: string;
  readonly header: SessionHeader;
  private current: SessionState;
  private seq: number;
  private fd: number;
  private readonly lockPath: string;
  private readonly bus: HookBus | undefined;
  private readonly now: () => number;
  private readonly flushDelayMs: number;
  private readonly flushIntervalMs: number;
  private readonly flushBytes: number;
  /** When the last background write started (performance.now()). */
  private lastWriteAtMs = Number.NEGATIVE_INFINITY;
  /** Frozen events to serialise, or raw lines (with their `\n`), in seq order. */
  private queue: (AnySessionEvent | string)[] = [];
  private queuedBytes = 0;
  private scheduled = false;
  private writing: Promise<void> | undefined;
  private unsynced = false;
  private failure: unknown;
  private closing: Promise<void> | undefined;
  private closed = false;

  /** @internal Use `createJournal` / `openJournal`. */
  constructor(init: { path: string; header: SessionHeader; state: SessionState; lastSeq: number; fd: number; lockPath: string } & JournalIoOptions) {
    this.path = init.path;
    this.header = init.header;
    this.id = init.header.id;
    this.current = init.state;
    this.seq = init.lastSeq;
    this.fd = init.fd;
    this.lockPath = init.lockPath;
    this.bus = init.bus;
    this.now = init.now ?? Date.now;
    this.flushDelayMs = init.flushDelayMs ?? 0;
    this.flushIntervalMs = init.flushIntervalMs ?? FLUSH_INTERVAL_MS;
    this.flushBytes = init.flushBytes ?? FLUSH_BYTES;
    if (this.bus !== undefined) this.bus.declare('session/event', 'sink');
    openJournals.add(this);
    installExitHook();
  }

  get state(): SessionState {
    return this.current;
  }

  /** Seq of the last event appended (the state's `lastSeq` counts only state-changing events). */
  get lastSeq(): number {
    return this.seq;
  }

  append<T extends SessionEventType>(type: T, data: SessionEventMap[T], options?: AppendOptions): SessionEvent<T> | Promise<SessionEvent<T>> {
    this.assertWritable();
    // Known secret values never reach the journal (nor the fold the next request is built from).
    // The model's stream deltas are skipped: a model cannot echo a value it was never shown.
    if (type !== 'assistant/chunk' || !DELTA_CHUNKS.has((data as { chunk?: { type?: string } }).chunk?.type ?? '')) {
      const redactor = secrets();
      if (redactor.size > 0) data = redactor.redactValue(data);
    }
    assertLosslessJson(data, 'data', true); // validates and deep-freezes in one walk
    const ignorable = options?.ignorable ?? isIgnorableByDefault(type);
    const seq = this.seq + 1;
    const atMs = this.now();
    const event = (ignorable ? { seq, type, atMs, data, ignorable: true } : { seq, type, atMs, data }) as SessionEvent<T>;
    Object.freeze(event);
    return this.commit(event as unknown as AnySessionEvent, undefined) as unknown as SessionEvent<T> | Promise<SessionEvent<T>>;
  }

  /**
   * @internal Appends a recorded event as is (import, fork): its `seq` must be the next one.
   * @throws HarnessError `INVALID_EVENT_DATA`, `JOURNAL_CORRUPT` (a seq out of order).
   */
  appendRecord(event: AnySessionEvent, raw?: string): AnySessionEvent | Promise<AnySessionEvent> {
    this.assertWritable();
    if (event.seq !== this.seq + 1) {
      throw new HarnessError('JOURNAL_CORRUPT', `Recorded event seq ${event.seq} cannot follow seq ${this.seq} in ${this.path}.`, { details: { path: this.path, seq: event.seq } });
    }
    assertLosslessJson(event.data, 'data', true);
    return this.commit(Object.isFrozen(event) ? event : Object.freeze({ ...event }), raw);
  }

  private commit<E extends AnySessionEvent>(event: E, raw: string | undefined): E | Promise<E> {
    const next = reduceEvent(this.current, event); // throws UNKNOWN_EVENT_TYPE before anything changes
    this.seq = event.seq;
    this.current = next;
    if (raw === undefined) {
      this.queue.push(event);
      this.queuedBytes += QUEUED_EVENT_BYTES;
    } else {
      const line = `${raw}\n`;
      this.queue.push(line);
      this.queuedBytes += line.length;
    }
    if (this.queuedBytes >= this.flushBytes) {
      if (this.writing === undefined) this.pump().catch(() => undefined);
    } else if (!this.scheduled) this.schedule();
    if (this.bus === undefined || !this.bus.hasSinks('session/event')) return event;
    const delivered = this.bus.deliver('session/event', { sessionId: this.id, event });
    return delivered === undefined ? event : delivered.then(() => event);
  }

  checkpoint(): Promise<void> {
    return this.sync();
  }

  flush(): Promise<void> {
    return this.sync();
  }

  close(): Promise<void> {
    if (this.closing !== undefined) return this.closing;
    this.closing = (async () => {
      try {
        if (this.failure === undefined) await this.sync();
      } finally {
        this.closed = true;
        openJournals.delete(this);
        try {
          closeSync(this.fd);
        } catch {
          // already closed
        }
        releaseLock(this.lockPath);
      }
      if (this.failure !== undefined) throw this.writeFailed();
    })();
    return this.closing;
  }

  /** @internal The process is exiting without `close()`. */
  closeSyncOnExit(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      if (this.writing === undefined && this.queue.length > 0 && this.failure === undefined) {
        writeAllSync(this.fd, Buffer.from(linesOf(this.queue), 'utf8'));
        this.queue = [];
      }
      closeSync(this.fd);
    } catch {
      // nothing more can be done while exiting
    }
    releaseLock(this.lockPath);
  }

  private assertWritable(): void {
    if (this.closed || this.closing !== undefined) {
      throw new HarnessError('JOURNAL_CLOSED', `The journal ${this.path} is closed; open it again with openJournal to append.`, { details: { path: this.path } });
    }
    if (this.failure !== undefined) throw this.writeFailed();
  }

  private writeFailed(): HarnessError {
    const cause = this.failure;
    return new HarnessError('JOURNAL_WRITE_FAILED', `Writing ${this.path} failed (${cause instanceof Error ? cause.message : String(cause)}); events appended since the last checkpoint may be lost. Reopen the journal to repair it.`, {
      cause,
      details: { path: this.path },
    });
  }

  private schedule(): void {
    this.scheduled = true;
    if (this.flushDelayMs > 0) {
      setTimeout(this.scheduledFlush, this.flushDelayMs);
      return;
    }
    const sinceMs = performance.now() - this.lastWriteAtMs;
    if (sinceMs >= this.flushIntervalMs) setImmediate(this.scheduledFlush);
    // Appends keep coming: one write for all of them, a little later. Unref'd: a process that
    // exits meanwhile writes the queue in its exit hook.
    else setTimeout(this.scheduledFlush, this.flushIntervalMs - sinceMs).unref();
  }

  /** The background flush (one function per journal: no closure per schedule on the hot path). */
  private readonly scheduledFlush = (): void => {
    this.scheduled = false;
    void this.pump().catch(() => undefined);
  };

  /**
   * Writes what is queued now, as one write (one write in flight at a time). Lines queued while it is
   * in flight are left to the next background flush (`schedule`, rate-limited) or to `sync()`, which
   * pumps until the queue is empty — so a steady stream of appends makes one write per interval,
   * not one per append.
   */
  private pump(): Promise<void> {
    if (this.writing !== undefined) return this.writing;
    if (this.queue.length === 0) return Promise.resolve();
    if (this.failure !== undefined) return Promise.reject(this.writeFailed());
    const writing = (async () => {
      try {
        const text = linesOf(this.queue);
        this.queue = [];
        this.queuedBytes = 0;
        this.lastWriteAtMs = performance.now();
        await writeAll(this.fd, Buffer.from(text, 'utf8'));
        this.unsynced = true;
      } catch (error) {
        this.failure = error;
        this.bus?.report({ level: 'error', code: 'JOURNAL_WRITE_FAILED', source: 'session', message: `Writing ${this.path} failed: ${error instanceof Error ? error.message : String(error)}`, error });
        throw this.writeFailed();
      } finally {
        this.writing = undefined;
      }
      // Lines queued meanwhile: at once past the size threshold, else by the background flush.
      if (this.queue.length > 0) {
        if (this.queuedBytes >= this.flushBytes) void this.pump().catch(() => undefined);
        else if (!this.scheduled) this.schedule();
      }
    })();
    this.writing = writing;
    return writing;
  }

  private async sync(): Promise<void> {
    if (this.closed) return;
    if (this.failure !== undefined) throw this.writeFailed();
    // A write may be in flight while more lines queue behind it: pump until both are empty.
    while (this.writing !== undefined || this.queue.length > 0) await this.pump();
    if (this.unsynced) {
      this.unsynced = false;
      try {
        await new Promise<void>((resolve, reject) => fsFsync(this.fd, (error) => (error ? reject(error) : resolve())));
      } catch (error) {
        this.failure = error;
        throw this.writeFailed();
      }
    }
  }
}

/** A salvaged journal: read-only. */
class ReadOnlyJournal implements SessionJournal {
  constructor(
    readonly path: string,
    readonly header: SessionHeader,
    readonly state: SessionState,
    readonly lastSeq: number,
  ) {}
  get id(): string {
    return this.header.id;
  }
  append(): never {
    throw new HarnessError('JOURNAL_READ_ONLY', `${this.path} was opened read-only (salvage); it cannot be appended to. Repair or fork it first.`, { details: { path: this.path } });
  }
  async checkpoint(): Promise<void> {}
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}

/** The lines of a queue: events serialised now, raw lines as they are. */
function linesOf(queue: readonly (AnySessionEvent | string)[]): string {
  let text = '';
  for (let i = 0; i < queue.length; i++) {
    const entry = queue[i]!;
    text += typeof entry === 'string' ? entry : serializeEvent(entry);
  }
  return text;
}

const typeFragments = new Map<string, string>();

/** One record line (with its `\n`). Key order: seq, type, atMs, data, ignorable. */
export function serializeEvent(event: AnySessionEvent): string {
  let fragment = typeFragments.get(event.type);
  if (fragment === undefined) {
    fragment = `,"type":${JSON.stringify(event.type)},"atMs":`;
    if (typeFragments.size < 4096) typeFragments.set(event.type, fragment);
  }
  const atMs = Number.isFinite(event.atMs) ? String(event.atMs) : 'null';
  return '{"seq":' + event.seq + fragment + atMs + ',"data":' + JSON.stringify(event.data) + (event.ignorable === true ? ',"ignorable":true}\n' : '}\n');
}

/**
 * `mkdir -p`, one level at a time from the nearest existing ancestor. Not `mkdirSync({ recursive })`:
 * on some paths (under /proc) Node's recursive mkdir retries forever instead of failing.
 * @throws HarnessError `DATA_DIR_INVALID` naming the directory and the system's reason.
 */
function ensureDirectory(dir: string): void {
  const missing: string[] = [];
  try {
    for (let path = resolve(dir); ; path = dirname(path)) {
      const info = statSync(path, { throwIfNoEntry: false });
      if (info !== undefined) {
        if (!info.isDirectory()) throw Object.assign(new Error(`${path} is a file, not a directory`), { code: 'ENOTDIR' });
        break;
      }
      missing.push(path);
      if (dirname(path) === path) break;
    }
    for (let i = missing.length - 1; i >= 0; i--) {
      try {
        mkdirSync(missing[i]!);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error; // another process made it meanwhile
      }
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'UNKNOWN';
    const reason = error instanceof Error ? error.message : String(error);
    throw new HarnessError('DATA_DIR_INVALID', `Cannot create the journal directory ${dir} (${reason}); point the data directory at a writable folder.`, {
      cause: error,
      details: { dir, errno: code },
    });
  }
}

function writeAll(fd: number, buffer: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    let offset = 0;
    const step = (): void =>
      fsWrite(fd, buffer, offset, buffer.length - offset, null, (error, written) => {
        if (error) return reject(error);
        offset += written;
        if (offset < buffer.length) step();
        else resolve();
      });
    step();
  });
}

function writeAllSync(fd: number, buffer: Buffer): void {
  let offset = 0;
  while (offset < buffer.length) offset += writeSync(fd, buffer, offset, buffer.length - offset);
}

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // some file systems cannot fsync a directory
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function reportDiagnostic(bus: HookBus | undefined, level: 'warning' | 'info', code: string, message: string): void {
  if (bus !== undefined) bus.report({ level, code, source: 'session', message });
  else if (level === 'warning') process.emitWarning(message, { code });
}

/** A prefix written into a new journal file before it opens (fork): raw lines and their fold. */
export interface JournalPrefix {
  /** Writes the raw event lines (each with its `\n`) through `write`, in seq order. */
  readonly copy: (write: (text: string) => void) => Promise<void>;
  readonly state: SessionState;
  readonly lastSeq: number;
}

/**
 * Creates a journal file with `header` (and an optional prefix of events), fsyncs it, and opens it
 * for writing with the lock held.
 *
 * With a prefix (a fork: many events, a long copy) the file is written under a temporary name
 * (`<id>.jsonl.partial-<pid>`, which no reader lists) and linked to its final name only after its
 * last fsync: a copy cut by a signal or a crash never looks like a complete journal. `link(2)` is
 * an exclusive create, so the final name is still never overwritten. The temporary name is removed
 * on every error and on `process.exit` (a SIGTERM with no handler); a SIGKILL can leave one behind.
 * @internal Use `createJournal` / `forkSession`.
 * @throws HarnessError `JOURNAL_EXISTS`, `JOURNAL_LOCKED`, `DATA_DIR_INVALID` (the directory cannot be made).
 */
export async function createJournalFile(path: string, header: SessionHeader, io: JournalIoOptions = {}, prefix?: JournalPrefix): Promise<FileJournal> {
  ensureDirectory(dirname(path));
  const lockPath = lockPathOf(path);
  const lock = acquireLock(lockPath, path);
  const exists = (): HarnessError => new HarnessError('JOURNAL_EXISTS', `A journal already exists at ${path}; open it with openJournal, or pick another session id.`, { details: { path } });
  const writePath = prefix === undefined ? path : `${path}.partial-${process.pid}`;
  const removePartial = (): void => {
    try {
      unlinkSync(writePath);
    } catch {
      // already gone
    }
  };
  let fd: number | undefined;
  try {
    if (prefix !== undefined) {
      if (existsSync(path)) throw exists();
      process.on('exit', removePartial);
    }
    try {
      fd = openSync(writePath, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_APPEND, 0o644);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw exists();
      throw error;
    }
    const target = fd;
    writeAllSync(target, Buffer.from(`${JSON.stringify(header)}\n`, 'utf8'));
    if (prefix !== undefined) {
      let pending: string[] = [];
      let pendingBytes = 0;
      const drain = async (): Promise<void> => {
        if (pending.length === 0) return;
        const text = pending.join('');
        pending = [];
        pendingBytes = 0;
        await writeAll(target, Buffer.from(text, 'utf8'));
      };
      let chain: Promise<void> = Promise.resolve();
      await prefix.copy((text) => {
        pending.push(text);
        pendingBytes += text.length;
        if (pendingBytes >= 1 << 20) chain = chain.then(drain);
      });
      await chain;
      await drain();
    }
    fsyncSync(target);
    if (prefix !== undefined) {
      try {
        linkSync(writePath, path);
        removePartial();
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') throw exists();
        // A file system without hard links: a rename (the lock keeps other writers of this id out).
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
        if (existsSync(path)) throw exists();
        renameSync(writePath, path);
      }
      process.off('exit', removePartial);
    }
    fsyncDir(dirname(path));
  } catch (error) {
    if (fd !== undefined) {
      closeSync(fd);
      // The file is ours alone (created exclusively): a half-written one must not stay behind.
      removePartial();
    }
    if (prefix !== undefined) process.off('exit', removePartial);
    releaseLock(lockPath);
    throw error;
  }
  if (lock.staleTakenOver) reportDiagnostic(io.bus, 'warning', 'JOURNAL_STALE_LOCK', `Took over the stale writer lock of ${basename(path)} (pid ${lock.staleTakenOver.pid ?? 'unknown'} is gone).`);
  return new FileJournal({ path, header, state: prefix?.state ?? initialState(header.id), lastSeq: prefix?.lastSeq ?? 0, fd, lockPath, ...io });
}

/**
 * Starts a new session journal at `<dataDir>/sessions/<id>.jsonl` and opens it for writing.
 * @throws HarnessError `INVALID_SESSION_ID`, `JOURNAL_EXISTS`, `JOURNAL_LOCKED`.
 */
export async function createJournal(options: CreateJournalOptions = {}): Promise<SessionJournal> {
  const id = options.id ?? randomUUID();
  assertSessionId(id);
  const header: SessionHeader = deepFreeze({
    type: 'session',
    version: JOURNAL_FORMAT_VERSION,
    id,
    createdAtMs: options.createdAtMs ?? (options.now ?? Date.now)(),
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.parent !== undefined ? { parent: options.parent } : {}),
    ...(options.importedFrom !== undefined ? { importedFrom: options.importedFrom } : {}),
  });
  assertLosslessJson(header, 'header');
  return createJournalFile(journalPath(id, options.dataDir), header, options);
}

/**
 * Opens an existing journal for writing (the agent loop resumes a session this way).
 *
 * Takes the writer lock (a stale lock of a dead pid is taken over, with a diagnostic), reads and
 * folds the whole file (streaming), and repairs what a crash left:
 * - a torn last line is copied to `<id>.jsonl.torn-<ms>` (fsynced), and only then cut from the
 *   journal (the one sanctioned cut, of bytes now kept in the sidecar);
 * - an interrupted turn, step, model call, tool call or compaction is closed with synthetic
 *   events (see `planRepair`), appended and checkpointed.
 * In every error case the file is not modified and the lock is released.
 * @throws HarnessError `JOURNAL_NOT_FOUND`, `JOURNAL_LOCKED`, `JOURNAL_HEADER`, `JOURNAL_VERSION`,
 *   `JOURNAL_CORRUPT`, `UNKNOWN_EVENT_TYPE`.
 */
export async function openJournal(idOrPath: string, options: OpenJournalOptions = {}): Promise<OpenedJournal> {
  const path = resolveSessionPath(idOrPath, options.dataDir);
  if (!existsSync(path)) throw new HarnessError('JOURNAL_NOT_FOUND', `No journal at ${path}.`, { details: { path } });
  if (options.salvage) {
    const scan = await scanJournal(path, { salvage: true });
    const skippedLines: SkippedLine[] = [...scan.skipped, ...(scan.tornTail ? [scan.tornTail] : [])];
    return {
      journal: new ReadOnlyJournal(path, scan.header, scan.state, scan.lastSeq),
      repairs: { syntheticEvents: [], skippedLines },
    };
  }
  const lockPath = lockPathOf(path);
  const lock = acquireLock(lockPath, path);
  let fd: number | undefined;
  try {
    const scan = await scanJournal(path, { trackLiveCall: true });
    let tornTail: RepairReport['tornTail'];
    if (scan.tornTail !== undefined) tornTail = moveTornTail(path, scan.tornTail.start);
    fd = openSync(path, fsConstants.O_WRONLY | fsConstants.O_APPEND);
    const journal = new FileJournal({ path, header: scan.header, state: scan.state, lastSeq: scan.lastSeq, fd, lockPath, ...options });
    if (lock.staleTakenOver) {
      reportDiagnostic(options.bus, 'warning', 'JOURNAL_STALE_LOCK', `Took over the stale writer lock of ${basename(path)} (pid ${lock.staleTakenOver.pid ?? 'unknown'} is gone).`);
    }
    const syntheticEvents: AnySessionEvent[] = [];
    for (const planned of planRepair(scan.state, scan.liveCall)) {
      syntheticEvents.push((await journal.append(planned.type, planned.data as never)) as AnySessionEvent);
    }
    if (syntheticEvents.length > 0 || tornTail !== undefined) {
      await journal.checkpoint();
      reportDiagnostic(
        options.bus,
        'info',
        'JOURNAL_REPAIRED',
        `Repaired ${basename(path)}: ${tornTail ? `moved a torn last line (${tornTail.byteCount} bytes) to ${basename(tornTail.sidecarPath)}; ` : ''}${syntheticEvents.length} synthetic event(s) closed what a crash left open.`,
      );
    }
    return {
      journal,
      repairs: {
        ...(tornTail ? { tornTail } : {}),
        syntheticEvents,
        ...(lock.staleTakenOver ? { staleLock: lock.staleTakenOver } : {}),
      },
    };
  } catch (error) {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // ignore
      }
    }
    releaseLock(lockPath);
    throw error;
  }
}

/**
 * Moves the bytes from `start` to the end of the file into a new sidecar file, fsyncs it (and its
 * directory), and only then truncates the journal to `start` and fsyncs it.
 */
function moveTornTail(path: string, start: number): { sidecarPath: string; byteCount: number } {
  const fd = openSync(path, 'r+');
  try {
    const size = fstatSync(fd).size;
    const byteCount = size - start;
    const bytes = Buffer.alloc(byteCount);
    let read = 0;
    while (read < byteCount) {
      const n = readSync(fd, bytes, read, byteCount - read, start + read);
      if (n === 0) break;
      read += n;
    }
    const stamp = Date.now();
    let sidecarPath = `${path}.torn-${stamp}`;
    let sidecar: number | undefined;
    for (let n = 1; sidecar === undefined; n++) {
      try {
        sidecar = openSync(sidecarPath, 'wx', 0o644);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || n > 100) throw error;
        sidecarPath = `${path}.torn-${stamp}-${n}`;
      }
    }
    try {
      writeAllSync(sidecar, bytes.subarray(0, read));
      fsyncSync(sidecar);
    } finally {
      closeSync(sidecar);
    }
    fsyncDir(dirname(path));
    ftruncateSync(fd, start);
    fsyncSync(fd);
    return { sidecarPath, byteCount: read };
  } finally {
    closeSync(fd);
  }
}
