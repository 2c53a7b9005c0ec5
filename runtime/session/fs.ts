/**
 * File-system helpers of the file store: making the data directory, whole-buffer writes, and
 * fsync of a file or a directory.
 */
import { closeSync, fsync, fsyncSync, mkdirSync, openSync, statSync, write as fsWrite, writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { HarnessError } from '../kernel/errors.ts';

/**
 * `mkdir -p`, one level at a time from the nearest existing ancestor. Not `mkdirSync({ recursive })`:
 * on some paths (under /proc) Node's recursive mkdir retries forever instead of failing.
 * @throws HarnessError `DATA_DIR_INVALID` naming the directory and the system's reason.
 */
export function ensureDirectory(dir: string): void {
  const missing: string[] = [];
  try {
    for (let path = resolve(dir); ; path = dirname(path)) {
      let info: ReturnType<typeof statSync>;
      try {
        info = statSync(path, { throwIfNoEntry: false });
      } catch (error) {
        // A file on the way up: walk on to it, so the error names it (not "not a directory, stat <path under it>").
        if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') throw error;
        info = undefined;
      }
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

/** Writes the whole buffer at the file's position (short writes continue). */
export function writeAll(fd: number, buffer: Uint8Array): Promise<void> {
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

export function writeAllSync(fd: number, buffer: Buffer): void {
  let offset = 0;
  while (offset < buffer.length) offset += writeSync(fd, buffer, offset, buffer.length - offset);
}

/** fsync of a directory (a new or renamed entry is durable); a file system that cannot is ignored. */
export function fsyncDir(dir: string): void {
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

/**
 * fsync of an open file in the thread pool: the event loop (every other session's stream in a
 * served process) does not wait for the disk.
 */
export function fsyncFile(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (error) => (error ? reject(error) : resolve())));
}

/** {@link fsyncDir} in the thread pool (see {@link fsyncFile}); a file system that cannot is ignored. */
export async function fsyncDirInPool(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // some file systems cannot fsync a directory
  } finally {
    await handle?.close().catch(() => undefined);
  }
}
