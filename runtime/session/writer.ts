/**
 * The journal writer (DESIGN "Sessions and the journal", "Durability", "The hot path"): one open,
 * writable session over any store's {@link JournalLease}.
 *
 * Appending is on the per-chunk hot path: `append` validates (lossless JSON, an iterative walk),
 * assigns `seq`/`atMs`, deep-freezes, folds (into one {@link Folder}: O(1) per event, the frozen
 * state made when `state` is read; nothing for chunks) and queues the frozen event — no
 * serialisation, no store call, no await: the lines are made when the queue is written, in one warm
 * loop per write instead of one cold `JSON.stringify` per chunk — encoded straight into one pooled
 * buffer (`record-bytes.ts`, no line strings) for a store with `lease.writeBytes`, as strings for
 * `lease.write`. A background flush writes the queue as one `lease.writeBytes`/`lease.write` (the
 * file store's one `write(2)`, the PostgreSQL store's one transaction): on the next turn of the
 * event loop after a quiet spell, then at most once per `flushIntervalMs` (100 ms) while appends
 * keep coming — a stream's chunks share a write instead of one write each — or at once when about
 * 64 KiB are queued; `checkpoint()` writes everything queued and makes it durable (`lease.sync`:
 * fsync for files; a committed transaction already is).
 * The loop checkpoints before a model call is dispatched, before a tool body runs and at turn end:
 * a crash loses at most what was appended since the last checkpoint (in the file store at most the
 * last line is torn).
 *
 * Two hooks see the events: the `session/event` sink gets each one as it is appended (live, before
 * it is written: a crash can lose it, and a repair then reuse its seq), and `session/written` gets
 * each batch once its `lease.write` succeeded — what a view that must never show an unstored
 * event follows.
 */
import type { HookBus } from '../kernel/bus.ts';
import { HarnessError } from '../kernel/errors.ts';
import { secrets } from '../kernel/secrets.ts';
import type { AnySessionEvent, SessionEvent, SessionEventMap, SessionEventType, SessionHeader } from './events.ts';
import { Folder } from './fold.ts';
import { assertLosslessJson } from './json.ts';
import { RecordBytes } from './record-bytes.ts';
import { isIgnorableByDefault } from './registry.ts';
import type { JournalLease } from './store.ts';
import type { AppendOptions, SessionJournal, SessionState } from './types.ts';

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

/** A recorded event queued with its line text (import, fork), written verbatim. */
class RawRecord {
  constructor(
    readonly event: AnySessionEvent,
    readonly line: string,
  ) {}
}

export interface JournalIoOptions {
  /** Delivers every appended event on the `session/event` sink, and every written batch on `session/written`. */
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

const openJournals = new Set<StoreJournal>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A process that exits without closing its journals: write what is queued (when no write is in
  // flight, so lines cannot interleave) where the store can do it synchronously, and release the
  // leases. `close()` is still the contract.
  process.on('exit', () => {
    for (const journal of openJournals) journal.closeSyncOnExit();
  });
}

/** One writable session journal, on any store. */
export class StoreJournal implements SessionJournal {
  readonly id: string;
  /** Where the session is (the file store: the journal's path). */
  readonly path: string;
  readonly header: SessionHeader;
  /** The state as a fold in progress: O(1) per event, finished (frozen) when `state` is read. */
  private readonly folder: Folder;
  private seq: number;
  private readonly lease: JournalLease;
  private readonly bus: HookBus | undefined;
  private readonly now: () => number;
  private readonly flushDelayMs: number;
  private readonly flushIntervalMs: number;
  private readonly flushBytes: number;
  /** When the last background write started (performance.now()). */
  private lastWriteAtMs = Number.NEGATIVE_INFINITY;
  /** Frozen events to serialise, or recorded events with their lines, in seq order. */
  private queue: (AnySessionEvent | RawRecord)[] = [];
  private queuedBytes = 0;
  private scheduled = false;
  private writing: Promise<void> | undefined;
  /** Batches written so far, and how many of them the last finished `lease.sync()` covers. */
  private writeCount = 0;
  private syncedCount = 0;
  /** The `lease.sync()` in flight: a checkpoint that comes meanwhile waits for it (and syncs again if its lines came after it began). */
  private syncing: Promise<void> | undefined;
  private failure: unknown;
  private closing: Promise<void> | undefined;
  private closed = false;

  /** @internal Use `createJournal` / `openJournal`. */
  constructor(init: { lease: JournalLease; header: SessionHeader; state: SessionState; lastSeq: number } & JournalIoOptions) {
    this.lease = init.lease;
    this.path = init.lease.location;
    this.header = init.header;
    this.id = init.header.id;
    this.folder = new Folder(init.state);
    this.seq = init.lastSeq;
    this.bus = init.bus;
    this.now = init.now ?? Date.now;
    this.flushDelayMs = init.flushDelayMs ?? 0;
    this.flushIntervalMs = init.flushIntervalMs ?? FLUSH_INTERVAL_MS;
    this.flushBytes = init.flushBytes ?? FLUSH_BYTES;
    if (this.bus !== undefined) {
      this.bus.declare('session/event', 'sink');
      this.bus.declare('session/written', 'emit');
    }
    openJournals.add(this);
    installExitHook();
  }

  get state(): SessionState {
    return this.folder.finish();
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
   * @internal Appends a recorded event as is (import, fork): its `seq` must be the next one. `raw`
   * is its line text (without `\n`), written verbatim.
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
    this.folder.apply(event); // throws UNKNOWN_EVENT_TYPE before anything changes
    this.seq = event.seq;
    if (raw === undefined) {
      this.queue.push(event);
      this.queuedBytes += QUEUED_EVENT_BYTES;
    } else {
      this.queue.push(new RawRecord(event, raw));
      this.queuedBytes += raw.length + 1;
    }
    if (this.queuedBytes >= this.flushBytes) {
      if (this.writing === undefined) this.pump().catch(() => undefined);
    } else if (!this.scheduled) this.schedule();
    if (this.bus === undefined || !this.bus.hasSinks('session/event')) return event;
    const parent = this.header.parentSession;
    const delivered = this.bus.deliver('session/event', parent === undefined ? { sessionId: this.id, event } : { sessionId: this.id, event, parentSessionId: parent.sessionId, parentSession: parent });
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
        await this.lease.release().catch(() => undefined);
      }
      if (this.failure !== undefined) throw this.writeFailed();
    })();
    return this.closing;
  }

  /** @internal Gives the lease up without writing what is queued (an open that failed midway). */
  async abandon(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    openJournals.delete(this);
    await this.lease.release().catch(() => undefined);
  }

  /** @internal The process is exiting without `close()`. */
  closeSyncOnExit(): void {
    if (this.closed) return;
    this.closed = true;
    let pending: string[] | undefined;
    try {
      if (this.writing === undefined && this.queue.length > 0 && this.failure === undefined) pending = linesOf(this.queue);
      this.queue = [];
    } catch {
      // nothing more can be done while exiting
    }
    this.lease.exitSync?.(pending);
  }

  private assertWritable(): void {
    if (this.closed || this.closing !== undefined) {
      throw new HarnessError('JOURNAL_CLOSED', `The journal ${this.path} is closed; open the session again to append to it.`, { details: { path: this.path } });
    }
    if (this.failure !== undefined) throw this.writeFailed();
  }

  private writeFailed(): HarnessError {
    const cause = this.failure;
    return new HarnessError(
      'JOURNAL_WRITE_FAILED',
      `Writing ${this.path} failed (${cause instanceof Error ? cause.message : String(cause)}); events appended since the last checkpoint may be lost. Reopen the journal to repair it.`,
      {
        cause,
        details: { path: this.path, ...(HarnessError.is(cause) ? { cause: cause.code } : {}) },
      },
    );
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
   * Writes what is queued now, as one `lease.write` (one in flight at a time). Lines queued while
   * it is in flight are left to the next background flush (`schedule`, rate-limited) or to
   * `sync()`, which pumps until the queue is empty — so a steady stream of appends makes one write
   * per interval, not one per append.
   */
  private pump(): Promise<void> {
    if (this.writing !== undefined) return this.writing;
    if (this.queue.length === 0) return Promise.resolve();
    if (this.failure !== undefined) return Promise.reject(this.writeFailed());
    const writing = (async () => {
      try {
        const batch = this.queue;
        const firstSeq = this.seq - batch.length + 1;
        this.queue = [];
        this.queuedBytes = 0;
        this.lastWriteAtMs = performance.now();
        if (this.lease.writeBytes === undefined) await this.lease.write(firstSeq, linesOf(batch));
        else await this.writeBytes(this.lease.writeBytes, firstSeq, batch);
        this.writeCount++;
        this.written(batch, firstSeq + batch.length - 1);
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

  /** A batch encoded straight into a pooled buffer (`record-bytes.ts`: no line strings), written by the lease. */
  private async writeBytes(write: NonNullable<JournalLease['writeBytes']>, firstSeq: number, batch: readonly (AnySessionEvent | RawRecord)[]): Promise<void> {
    const encoder = new RecordBytes(eventLine);
    try {
      for (let i = 0; i < batch.length; i++) {
        const entry = batch[i]!;
        if (entry instanceof RawRecord) encoder.raw(entry.line);
        else encoder.event(entry);
      }
      await write.call(this.lease, firstSeq, encoder.bytes(), batch.length);
    } finally {
      encoder.release();
    }
  }

  /** Emits `session/written` for a batch the lease wrote (once per write, never per event). */
  private written(batch: readonly (AnySessionEvent | RawRecord)[], lastSeq: number): void {
    const bus = this.bus;
    if (bus === undefined || bus.count('session/written') === 0) return;
    const events: AnySessionEvent[] = new Array(batch.length);
    for (let i = 0; i < batch.length; i++) {
      const entry = batch[i]!;
      events[i] = entry instanceof RawRecord ? entry.event : entry;
    }
    const parent = this.header.parentSession?.sessionId;
    bus.emit('session/written', parent === undefined ? { sessionId: this.id, events, lastSeq } : { sessionId: this.id, parentSessionId: parent, events, lastSeq });
  }

  private async sync(): Promise<void> {
    if (this.closed) return;
    if (this.failure !== undefined) throw this.writeFailed();
    // A write may be in flight while more lines queue behind it: pump until both are empty.
    while (this.writing !== undefined || this.queue.length > 0) await this.pump();
    // Concurrent checkpoints share syncs: each waits until a sync that began after its lines were
    // written has finished (one already in flight when they were written may not cover them).
    const target = this.writeCount;
    while (this.syncedCount < target) {
      if (this.syncing === undefined) {
        const covering = this.writeCount;
        this.syncing = this.lease.sync().then(
          () => {
            this.syncing = undefined;
            if (covering > this.syncedCount) this.syncedCount = covering;
          },
          (error: unknown) => {
            this.syncing = undefined;
            this.failure = error;
            throw this.writeFailed();
          },
        );
      }
      await this.syncing;
    }
  }
}

/** @deprecated The writer is no longer file-specific: {@link StoreJournal}. */
export const FileJournal = StoreJournal;
export type FileJournal = StoreJournal;

/** A session opened read-only (salvage): refuses `append`. */
export class ReadOnlyJournal implements SessionJournal {
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

/**
 * The lines of a queue: events serialised now, raw lines as they are. The first seq is the
 * journal's `seq - lines.length + 1`: the queue always ends at the last seq appended.
 */
function linesOf(queue: readonly (AnySessionEvent | RawRecord)[]): string[] {
  const lines: string[] = new Array(queue.length);
  for (let i = 0; i < queue.length; i++) {
    const entry = queue[i]!;
    lines[i] = entry instanceof RawRecord ? entry.line : eventLine(entry);
  }
  return lines;
}

const typeFragments = new Map<string, string>();

/** One record line, without `\n`. Key order: seq, type, atMs, data, ignorable. */
export function eventLine(event: AnySessionEvent): string {
  let fragment = typeFragments.get(event.type);
  if (fragment === undefined) {
    fragment = `,"type":${JSON.stringify(event.type)},"atMs":`;
    if (typeFragments.size < 4096) typeFragments.set(event.type, fragment);
  }
  const atMs = Number.isFinite(event.atMs) ? String(event.atMs) : 'null';
  return `{"seq":${event.seq}${fragment}${atMs},"data":${JSON.stringify(event.data)}${event.ignorable === true ? ',"ignorable":true}' : '}'}`;
}

/** One record line (with its `\n`), as every store holds it. Key order: seq, type, atMs, data, ignorable. */
export function serializeEvent(event: AnySessionEvent): string {
  return `${eventLine(event)}\n`;
}
