/**
 * One writer per session: `<journal>.lock` holds the writer's pid. A lock whose pid is dead is
 * stale (a crashed writer) and is taken over, with a diagnostic. Lock files are created with
 * `O_EXCL`, so two live writers never both get one.
 */
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { HarnessError } from '../kernel/errors.ts';

/** Locks held by this process (a second writer in the same process is refused too). */
const held = new Set<string>();

export interface LockResult {
  /** The pid of a dead writer whose lock was taken over. */
  readonly staleTakenOver?: { readonly pid: number | null };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readHolder(lockPath: string): { pid: number | null; ageMs: number } | undefined {
  try {
    const text = readFileSync(lockPath, 'utf8');
    const pid = Number.parseInt(text.trim(), 10);
    let ageMs = 0;
    try {
      ageMs = Date.now() - statSync(lockPath).mtimeMs;
    } catch {
      // gone meanwhile
    }
    return { pid: Number.isInteger(pid) && pid > 0 ? pid : null, ageMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Takes the writer lock of `journalPath`.
 * @throws HarnessError `JOURNAL_LOCKED` naming the holder's pid when a live writer holds it.
 */
export function acquireLock(lockPath: string, journalPath: string): LockResult {
  let staleTakenOver: { pid: number | null } | undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    if (held.has(lockPath)) {
      throw new HarnessError('JOURNAL_LOCKED', `${journalPath} is already open for writing in this process (pid ${process.pid}); close that journal first, or open the session read-only with openSession.`, {
        details: { path: journalPath, pid: process.pid },
      });
    }
    try {
      const fd = openSync(lockPath, 'wx');
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      held.add(lockPath);
      return staleTakenOver ? { staleTakenOver } : {};
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = readHolder(lockPath);
    if (holder === undefined) continue; // released meanwhile: try again
    // An unreadable pid in a fresh lock file: its writer may be between create and write.
    const unknownButFresh = holder.pid === null && holder.ageMs < 2_000;
    if (unknownButFresh || (holder.pid !== null && holder.pid !== process.pid && isAlive(holder.pid))) {
      throw new HarnessError(
        'JOURNAL_LOCKED',
        `${journalPath} is open for writing by another process (pid ${holder.pid ?? 'unknown'}; lock ${lockPath}). One writer per session: wait for it to close, or open the session read-only with openSession.`,
        { details: { path: journalPath, lockPath, pid: holder.pid } },
      );
    }
    // Stale: the writer died (or a previous run of this pid left it). Take it over.
    try {
      unlinkSync(lockPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    staleTakenOver = { pid: holder.pid };
  }
  throw new HarnessError('JOURNAL_LOCKED', `Could not take the writer lock ${lockPath} (it keeps changing hands).`, { details: { path: journalPath, lockPath } });
}

/** Releases a lock this process holds (only if the file still names this process). */
export function releaseLock(lockPath: string): void {
  if (!held.delete(lockPath)) return;
  try {
    const holder = readHolder(lockPath);
    if (holder !== undefined && holder.pid === process.pid) unlinkSync(lockPath);
  } catch {
    // already gone
  }
}

export function holdsLock(lockPath: string): boolean {
  return held.has(lockPath);
}
