/**
 * One writer per session: `<journal>.lock` holds the writer's pid and a random token
 * (`"<pid> <token>\n"`; older builds wrote `"<pid>\n"`). A lock whose pid is dead is stale (a
 * crashed writer) and is taken over, with a diagnostic.
 *
 * The protocol, so that contenders racing for one stale lock never both win:
 * - a lock is created whole and exclusively: its content goes into a private temporary file that
 *   is then `link(2)`ed to the lock's name (which fails if the name exists), so a lock file is never
 *   seen empty or half-written;
 * - a stale lock is removed only by the holder of its *claim*, `<lock>.takeover-<hash of its
 *   content>`, itself a lock taken by this same protocol (so a claimer that died is taken over
 *   too). Under the claim the contender re-reads the lock and removes it only if it still has the
 *   content judged stale. While that content is in place no one else can remove it (only its
 *   claimer may), so the re-read and the unlink see the same file; every contender then races for
 *   the exclusive create again, which exactly one wins.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, linkSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { HarnessError } from '../kernel/errors.ts';

/** Locks held by this process (a second writer in the same process is refused too): path → content. */
const held = new Map<string, string>();

/** How long an unreadable lock file counts as a writer between create and write (older builds). */
const UNREADABLE_GRACE_MS = 2_000;
/** Claims nest only when a claimer died mid-takeover; deeper than this is a lock that keeps changing hands. */
const MAX_CLAIM_DEPTH = 4;
const ATTEMPTS = 50;

export interface LockResult {
  /** The pid of a dead writer whose lock was taken over. */
  readonly staleTakenOver?: { readonly pid: number | null };
}

interface Holder {
  readonly pid: number | null;
  readonly ageMs: number;
  readonly content: string;
}

/** True while process `pid` exists (one of another user counts: EPERM). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readHolder(lockPath: string): Holder | undefined {
  try {
    const content = readFileSync(lockPath, 'utf8');
    const pid = Number.parseInt(content.trim().split(' ')[0] ?? '', 10);
    let ageMs = 0;
    try {
      ageMs = Date.now() - statSync(lockPath).mtimeMs;
    } catch {
      // gone meanwhile
    }
    return { pid: Number.isInteger(pid) && pid > 0 ? pid : null, ageMs, content };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Creates `path` with `content`, whole, only if it does not exist. */
function createExclusive(path: string, content: string): boolean {
  const temporary = `${path}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temporary, content, { flag: 'wx', mode: 0o644 });
  try {
    linkSync(temporary, path);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
  } finally {
    try {
      unlinkSync(temporary);
    } catch {
      // already gone
    }
  }
  // A file system without hard links: O_EXCL (the lock is briefly empty; readers allow for that).
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o644);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  return true;
}

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

type Taken = { readonly taken: true; readonly content: string; readonly stalePid?: number | null } | { readonly taken: false; readonly holder: Holder };

/** Takes `path` by the protocol above: taken (with the stale pid it replaced), or its live holder. */
function take(path: string, depth: number): Taken {
  const content = `${process.pid} ${randomBytes(8).toString('hex')}\n`;
  let stalePid: number | null | undefined;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (createExclusive(path, content)) return stalePid !== undefined ? { taken: true, content, stalePid } : { taken: true, content };
    const holder = readHolder(path);
    if (holder === undefined) continue; // released meanwhile: try again
    const unreadableButFresh = holder.pid === null && holder.ageMs < UNREADABLE_GRACE_MS;
    if (unreadableButFresh || (holder.pid !== null && holder.pid !== process.pid && isAlive(holder.pid))) return { taken: false, holder };
    // Stale: the writer died (or a previous run of this pid left it). Claim its removal.
    if (depth >= MAX_CLAIM_DEPTH) break;
    const claimPath = `${path}.takeover-${createHash('sha256').update(holder.content).digest('hex').slice(0, 16)}`;
    const claim = take(claimPath, depth + 1);
    if (!claim.taken) {
      pause(2 + attempt); // another contender is removing it right now
      continue;
    }
    try {
      if (readHolder(path)?.content === holder.content) {
        unlinkSync(path);
        stalePid = holder.pid;
      }
    } finally {
      release(claimPath, claim.content);
    }
  }
  throw new HarnessError('JOURNAL_LOCKED', `Could not take the writer lock ${path} (it keeps changing hands).`, { details: { lockPath: path } });
}

function release(path: string, content: string): void {
  try {
    if (readHolder(path)?.content === content) unlinkSync(path);
  } catch {
    // already gone
  }
}

/**
 * Takes the writer lock of `journalPath`.
 * @throws HarnessError `JOURNAL_LOCKED` naming the holder's pid when a live writer holds it.
 */
export function acquireLock(lockPath: string, journalPath: string): LockResult {
  if (held.has(lockPath)) {
    throw new HarnessError('JOURNAL_LOCKED', `${journalPath} is already open for writing in this process (pid ${process.pid}); close that journal first, or read the session without writing.`, {
      details: { path: journalPath, pid: process.pid },
    });
  }
  let result: Taken;
  try {
    result = take(lockPath, 0);
  } catch (error) {
    if (HarnessError.is(error)) throw new HarnessError('JOURNAL_LOCKED', error.message, { details: { path: journalPath, lockPath } });
    throw error;
  }
  if (!result.taken) {
    const pid = result.holder.pid;
    throw new HarnessError(
      'JOURNAL_LOCKED',
      `${journalPath} is open for writing by another process (pid ${pid ?? 'unknown'}; lock ${lockPath}). One writer per session: wait for it to close, or read the session without writing (a replay does).`,
      { details: { path: journalPath, lockPath, pid } },
    );
  }
  held.set(lockPath, result.content);
  return result.stalePid !== undefined ? { staleTakenOver: { pid: result.stalePid } } : {};
}

/** Releases a lock this process holds (only if the file still is the one this process wrote). */
export function releaseLock(lockPath: string): void {
  const content = held.get(lockPath);
  if (content === undefined) return;
  held.delete(lockPath);
  release(lockPath, content);
}

export function holdsLock(lockPath: string): boolean {
  return held.has(lockPath);
}

/**
 * The pid of the live writer of the journal whose lock is `lockPath` (this process's own pid when it
 * holds it), or undefined when none holds it or its holder is dead (a stale lock of a crash).
 */
export function liveWriterPid(lockPath: string): number | undefined {
  if (held.has(lockPath)) return process.pid;
  const holder = readHolder(lockPath);
  return holder?.pid != null && holder.pid !== process.pid && isAlive(holder.pid) ? holder.pid : undefined;
}
