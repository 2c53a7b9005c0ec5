/**
 * The JSONL file store, the embedded default (DESIGN "Sessions and the journal", "Durability").
 *
 * `<dataDir>/sessions/<sessionId>.jsonl`: line 1 the header, then one event per line. One writer
 * per session: `<journal>.lock` holds the writer's pid (`lock.ts`; a dead pid's lock is taken
 * over). A batch is one `write(2)` on an `O_APPEND` descriptor, `sync` is `fsync`; a crash can
 * leave at most the last line torn, which the next open moves to a sidecar (`torn-tail.ts`).
 * Session ids of this store are file names; every method also takes a journal path (a copy, a
 * file elsewhere), as the CLI does.
 */
import { closeSync, constants as fsConstants, existsSync, linkSync, openSync, readdirSync, renameSync, unlinkSync } from 'node:fs';
import { open, readdir, stat, type FileHandle } from 'node:fs/promises';
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { HarnessError } from '../kernel/errors.ts';
import { ensureDirectory, fsyncDirInPool, fsyncFile, writeAll, writeAllSync } from './fs.ts';
import { lineBatches, type RawLine } from './lines.ts';
import { acquireLock, isAlive, liveWriterPid, releaseLock } from './lock.ts';
import { dataDirOf, lockPathOf, partialPathOf, partialPidOf, resolveSessionPath, sessionsDir } from './paths.ts';
import type { JournalLease, JournalLine, JournalPrefix, JournalStore, ReadRange, TailOptions } from './store.ts';
import { RECORD_ENVELOPE, sortSummaries, Summarizer, type SessionSummary } from './summary.ts';
import { moveTornTail } from './torn-tail.ts';

/** How often a file tail looks for new lines when no change notice came (ms). */
const TAIL_POLL_MS = 250;

/** The lines, each followed by `\n`, as one string. */
export function joinLines(lines: readonly string[]): string {
  let text = '';
  for (let i = 0; i < lines.length; i++) text += `${lines[i]!}\n`;
  return text;
}

const idOfPath = (path: string): string => {
  const name = basename(path);
  return name.endsWith('.jsonl') ? name.slice(0, -'.jsonl'.length) : name;
};

/** The writer lease of one journal file: its lock and an `O_APPEND` descriptor. */
class FileLease implements JournalLease {
  readonly id: string;
  private released = false;

  constructor(
    readonly location: string,
    private readonly fd: number,
    private readonly lockPath: string,
    readonly staleTakenOver: { readonly pid: number | null } | undefined,
  ) {
    this.id = idOfPath(location);
  }

  write(_firstSeq: number, lines: readonly string[]): Promise<void> {
    return writeAll(this.fd, Buffer.from(joinLines(lines), 'utf8'));
  }

  /** The batch's bytes as one `write(2)` (short writes continue). */
  writeBytes(_firstSeq: number, bytes: Uint8Array): Promise<void> {
    return writeAll(this.fd, bytes);
  }

  sync(): Promise<void> {
    return fsyncFile(this.fd);
  }

  async release(): Promise<void> {
    this.releaseSync();
  }

  exitSync(pending: readonly string[] | undefined): void {
    if (this.released) return;
    try {
      if (pending !== undefined && pending.length > 0) writeAllSync(this.fd, Buffer.from(joinLines(pending), 'utf8'));
    } catch {
      // nothing more can be done while exiting
    }
    this.releaseSync();
  }

  moveTornTail(tail: { readonly start: number }): { sidecarPath: string; byteCount: number } {
    return moveTornTail(this.location, tail.start);
  }

  private releaseSync(): void {
    if (this.released) return;
    this.released = true;
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    releaseLock(this.lockPath);
  }
}

/** Options of `new FileJournalStore(options)`. */
export interface FileJournalStoreOptions {
  /** Default: `$HARNESS_HOME`, else `~/.harness`; journals go to `<dataDir>/sessions/`. */
  readonly dataDir?: string;
}

/** The JSONL file store (see the module comment). */
export class FileJournalStore implements JournalStore {
  readonly kind = 'file';
  readonly atomicWrites = false;
  readonly dataDir: string;

  constructor(options: FileJournalStoreOptions = {}) {
    this.dataDir = dataDirOf(options.dataDir);
  }

  get location(): string {
    return sessionsDir(this.dataDir);
  }

  /** The journal file of a session id (or a journal path, resolved). */
  pathOf(idOrPath: string): string {
    return resolveSessionPath(idOrPath, this.dataDir);
  }

  locationOf(idOrPath: string): string {
    return this.pathOf(idOrPath);
  }

  /**
   * Creates the journal file with the header line (and the prefix), fsyncs it and its folder,
   * and returns its lease with the lock held. A half-written file is removed on any error. The
   * fsyncs run in the thread pool, so the event loop turns meanwhile.
   *
   * With a prefix (a fork or an import: many events, a long copy) the file is written under a
   * temporary name (`<id>.jsonl.partial-<pid>`, which no reader lists) and linked to its final
   * name only after its last fsync: a copy cut by a signal or a crash never looks like a complete
   * journal. `link(2)` is an exclusive create, so the final name is still never overwritten. The
   * temporary name is removed on every error and on `process.exit` (a SIGTERM with no handler); one
   * a SIGKILL left behind is removed by the next fork or import into the folder, once its pid is
   * dead ({@link removeDeadPartials}). Readers refuse such a file by name (`NOT_A_JOURNAL_FILE`).
   */
  async create(idOrPath: string, headerLine: string, options: { prefix?: JournalPrefix } = {}): Promise<JournalLease> {
    const path = this.pathOf(idOrPath);
    const prefix = options.prefix;
    ensureDirectory(dirname(path));
    const lockPath = lockPathOf(path);
    const lock = acquireLock(lockPath, path);
    const exists = (): HarnessError => new HarnessError('JOURNAL_EXISTS', `A journal already exists at ${path}; resume that session, or pick another session id.`, { details: { path } });
    if (prefix !== undefined) removeDeadPartials(dirname(path));
    const writePath = prefix === undefined ? path : partialPathOf(path, process.pid);
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
      writeAllSync(target, Buffer.from(`${headerLine}\n`, 'utf8'));
      if (prefix !== undefined) await copyPrefix(target, prefix);
      // Both fsyncs in the thread pool: creating a session does not stall the others' streams.
      await fsyncFile(target);
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
      await fsyncDirInPool(dirname(path));
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
    return new FileLease(path, fd, lockPath, lock.staleTakenOver);
  }

  async lease(idOrPath: string): Promise<JournalLease> {
    const path = this.pathOf(idOrPath);
    if (!existsSync(path)) throw new HarnessError('JOURNAL_NOT_FOUND', `No journal at ${path}.`, { details: { path } });
    const lockPath = lockPathOf(path);
    const lock = acquireLock(lockPath, path);
    try {
      const fd = openSync(path, fsConstants.O_WRONLY | fsConstants.O_APPEND);
      return new FileLease(path, fd, lockPath, lock.staleTakenOver);
    } catch (error) {
      releaseLock(lockPath);
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new HarnessError('JOURNAL_NOT_FOUND', `No journal at ${path}.`, { details: { path } });
      throw error;
    }
  }

  async *read(idOrPath: string, range: ReadRange = {}): AsyncGenerator<readonly JournalLine[], void, undefined> {
    const path = this.pathOf(idOrPath);
    const fromSeq = range.fromSeq ?? 1;
    const toSeq = range.toSeq ?? Number.POSITIVE_INFINITY;
    const ranged = fromSeq > 1 || toSeq !== Number.POSITIVE_INFINITY;
    try {
      let header = true;
      for await (const lines of lineBatches(path)) {
        if (!ranged) {
          yield lines;
          continue;
        }
        const out: RawLine[] = [];
        let done = false;
        for (const line of lines) {
          if (header) {
            header = false;
            out.push(line);
            continue;
          }
          const seq = seqOfLine(line.text);
          // A line without a readable seq is passed on: the reader reports it.
          if (seq !== undefined && seq < fromSeq) continue;
          if (seq !== undefined && seq > toSeq) {
            done = true;
            break;
          }
          out.push(line);
        }
        if (out.length > 0) yield out;
        if (done) return;
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException)?.code === 'ENOENT') throw new HarnessError('JOURNAL_NOT_FOUND', `No journal at ${path}.`, { details: { path } });
      throw error;
    }
  }

  async *tail(idOrPath: string, options: TailOptions): AsyncGenerator<readonly JournalLine[], void, undefined> {
    const path = this.pathOf(idOrPath);
    const signal = options.signal;
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new HarnessError('JOURNAL_NOT_FOUND', `No journal at ${path}.`, { details: { path } });
      throw error;
    }
    let wake: (() => void) | undefined;
    const poke = (): void => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(path, { persistent: false }, poke);
      watcher.on('error', () => undefined);
    } catch {
      // no change notices here: polling alone
    }
    signal?.addEventListener('abort', poke, { once: true });
    let offset = 0;
    let lineNumber = 0;
    let lastSeq = options.afterSeq;
    let buffer = Buffer.allocUnsafe(1 << 16);
    try {
      while (signal?.aborted !== true) {
        const size = (await handle.stat()).size;
        if (size < offset) {
          // Cut (a torn tail moved aside): read again from the start; seqs already yielded are skipped.
          offset = 0;
          lineNumber = 0;
        }
        const out: RawLine[] = [];
        while (offset < size) {
          if (buffer.length < size - offset) buffer = Buffer.allocUnsafe(Math.min(Math.max(buffer.length * 2, size - offset), 1 << 24));
          const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - offset), offset);
          if (bytesRead === 0) break;
          let from = 0;
          for (;;) {
            const at = buffer.indexOf(0x0a, from);
            if (at === -1 || at >= bytesRead) break;
            lineNumber++;
            const text = buffer.toString('utf8', from, at);
            const start = offset + from;
            from = at + 1;
            if (lineNumber === 1) continue; // the header
            const seq = seqOfLine(text);
            if (seq === undefined || seq <= lastSeq) continue;
            lastSeq = seq;
            out.push({ text, lineNumber, start, end: offset + from, terminated: true });
          }
          if (from === 0) {
            if (bytesRead < buffer.length) break; // an unfinished line: wait for its end
            buffer = Buffer.allocUnsafe(buffer.length * 2);
            continue;
          }
          offset += from;
        }
        if (out.length > 0) yield out;
        if ((signal as AbortSignal | undefined)?.aborted === true) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, TAIL_POLL_MS);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    } finally {
      signal?.removeEventListener('abort', poke);
      watcher?.close();
      await handle.close();
    }
  }

  /** Sessions of `ids` whose lock file a live process holds (`lock.ts`). */
  async liveWriters(ids: readonly string[]): Promise<ReadonlySet<string>> {
    const out = new Set<string>();
    for (const id of ids) if (liveWriterPid(lockPathOf(this.pathOf(id))) !== undefined) out.add(id);
    return out;
  }

  /**
   * The sessions in `<dataDir>/sessions`, most recently updated first (unreadable ones last, with
   * their `error`). Each file is streamed once.
   */
  async list(): Promise<SessionSummary[]> {
    const dir = this.location;
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const out: SessionSummary[] = [];
    for (const name of names) {
      if (!name.endsWith('.jsonl')) continue;
      out.push(await summarizeFile(join(dir, name)));
    }
    return sortSummaries(out);
  }

  async close(): Promise<void> {}
}

/**
 * Removes the `<id>.jsonl.partial-<pid>` files of `dir` whose writer is dead (a fork or import
 * killed mid-copy); a live writer's (this process's among them) are left alone. Returns the
 * removed paths. Failures to list or remove are ignored: a leftover is never listed anyway.
 */
export function removeDeadPartials(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const pid = partialPidOf(name);
    if (pid === undefined || pid === process.pid || isAlive(pid)) continue;
    try {
      unlinkSync(join(dir, name));
      removed.push(join(dir, name));
    } catch {
      // gone already, or not ours to remove
    }
  }
  return removed;
}

/** The seq of a record line, read from its envelope (or its JSON when written otherwise). */
function seqOfLine(text: string): number | undefined {
  const match = RECORD_ENVELOPE.exec(text);
  if (match !== null) return Number(match[1]);
  const found = /^\s*\{.*?"seq"\s*:\s*(\d+)/.exec(text);
  return found === null ? undefined : Number(found[1]);
}

async function copyPrefix(fd: number, prefix: JournalPrefix): Promise<void> {
  let pending: string[] = [];
  let pendingBytes = 0;
  const drain = async (): Promise<void> => {
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    pendingBytes = 0;
    await writeAll(fd, Buffer.from(text, 'utf8'));
  };
  for await (const lines of prefix.lines) {
    for (const line of lines) {
      pending.push(`${line}\n`);
      pendingBytes += line.length + 1;
    }
    if (pendingBytes >= 1 << 20) await drain();
  }
  await drain();
}

async function summarizeFile(path: string): Promise<SessionSummary> {
  const summary = new Summarizer(path);
  try {
    for await (const lines of lineBatches(path)) for (const line of lines) summary.line(line.text, line.terminated);
  } catch (error) {
    const info = HarnessError.is(error) ? { code: error.code, message: error.message } : { code: 'UNREADABLE', message: String((error as Error)?.message ?? error) };
    const mtime = await stat(path).then(
      (s) => s.mtimeMs,
      () => 0,
    );
    return { id: summary.header?.id ?? idOfPath(path), path, turnCount: 0, usage: {}, eventCount: 0, lastUpdateAtMs: mtime, error: info };
  }
  if (summary.header === undefined) {
    // An empty file was still last written at its mtime (0 would list it as updated in 1970).
    const mtime = await stat(path).then(
      (s) => s.mtimeMs,
      () => 0,
    );
    return { id: idOfPath(path), path, turnCount: 0, usage: {}, eventCount: 0, lastUpdateAtMs: mtime, error: { code: 'JOURNAL_HEADER', message: `${path} is empty.` } };
  }
  const parent = summary.header.parent;
  const truncatedFork = parent !== undefined && summary.events < parent.seq;
  const fallback =
    summary.lastAtMs !== undefined && !truncatedFork
      ? 0
      : await stat(path).then(
          (s) => s.mtimeMs,
          () => (truncatedFork ? 0 : summary.header!.createdAtMs),
        );
  return summary.finish(path, fallback);
}
