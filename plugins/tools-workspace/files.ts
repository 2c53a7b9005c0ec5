/**
 * File helpers shared by the workspace tools: stat with clear errors, the binary heuristic, and the
 * atomic write (temp file in the same directory → fsync → rename).
 */
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { open, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { HarnessError } from '../../runtime/index.ts';
import { openConfined, openDirectoryConfined, throughDescriptor } from './paths.ts';

/** How much of a file's head the binary heuristic looks at. */
export const SNIFF_BYTES = 8192;

/** `stat`, with `FILE_NOT_FOUND` / `NOT_A_FILE` / `NOT_A_DIRECTORY` errors naming the path. */
export async function statPath(real: string, display: string, want: 'file' | 'directory'): Promise<Stats> {
  let info: Stats;
  try {
    info = await stat(real);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new HarnessError(want === 'file' ? 'FILE_NOT_FOUND' : 'DIRECTORY_NOT_FOUND', `${display} does not exist.`);
    }
    throw fsError(error, display);
  }
  if (want === 'file' && info.isDirectory()) throw new HarnessError('NOT_A_FILE', `${display} is a directory, not a file; use list_dir to see what it contains.`);
  if (want === 'file' && !info.isFile()) throw new HarnessError('NOT_A_FILE', `${display} is not a regular file.`);
  if (want === 'directory' && !info.isDirectory()) throw new HarnessError('NOT_A_DIRECTORY', `${display} is a file, not a directory; use read_file to read it.`);
  return info;
}

/** A Node fs error as a HarnessError with a stable code (`PERMISSION_DENIED`, `FS_ERROR`). */
export function fsError(error: unknown, display: string): HarnessError {
  if (error instanceof HarnessError) return error;
  const code = (error as NodeJS.ErrnoException)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'EACCES' || code === 'EPERM') return new HarnessError('PERMISSION_DENIED', `Permission denied for ${display}.`, { cause: error });
  if (code === 'EISDIR') return new HarnessError('NOT_A_FILE', `${display} is a directory, not a file.`, { cause: error });
  if (code === 'ENOTDIR') return new HarnessError('NOT_A_DIRECTORY', `A parent of ${display} is a file, not a directory.`, { cause: error });
  return new HarnessError('FS_ERROR', `${display}: ${message}`, { cause: error });
}

/**
 * The binary heuristic: a NUL byte, or bytes that are not UTF-8 (an incomplete sequence at the very
 * end of `bytes` is allowed when `partial`, since the sample may cut a character).
 */
export function looksBinary(bytes: Uint8Array, partial: boolean): boolean {
  if (bytes.includes(0)) return true;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: partial });
    return false;
  } catch {
    return true;
  }
}

export function binaryError(display: string): HarnessError {
  return new HarnessError('BINARY_FILE', `${display} looks like a binary file (it has NUL bytes or is not valid UTF-8); the file tools only handle text.`);
}

/** Reads a whole text file (after the size check), refusing binary content, through a verified descriptor. */
export async function readTextFile(root: string, real: string, display: string, maxBytes: number): Promise<{ text: string; info: Stats }> {
  await statPath(real, display, 'file');
  const handle = await openConfined(root, real, display).catch((error: unknown) => {
    throw fsError(error, display);
  });
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new HarnessError('NOT_A_FILE', `${display} is not a regular file.`);
    if (info.size > maxBytes) {
      throw new HarnessError('FILE_TOO_LARGE', `${display} is ${info.size} bytes, over the ${maxBytes}-byte limit for this tool.`);
    }
    const bytes = await handle.readFile();
    if (looksBinary(bytes, false)) throw binaryError(display);
    return { text: new TextDecoder('utf-8').decode(bytes), info };
  } finally {
    await handle.close();
  }
}

/**
 * Writes `content` atomically: a temp file in the same directory, fsync, rename over the target (then
 * a best-effort fsync of the directory). Creates missing parent directories. Keeps the mode of a file
 * it replaces. No temp file is left behind on failure. The directory is opened once and verified
 * inside `root`; the temp file is created and renamed through its descriptor (see `paths.ts`).
 */
export async function writeAtomic(root: string, real: string, display: string, content: string | Uint8Array, mode?: number): Promise<void> {
  let dir: FileHandle;
  try {
    dir = await openDirectoryConfined(root, dirname(real), dirname(display), true);
  } catch (error) {
    throw fsError(error, dirname(display));
  }
  try {
    const name = basename(real);
    const temp = throughDescriptor(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
    let handle: FileHandle | undefined;
    try {
      handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode ?? 0o666);
    } catch (error) {
      throw fsError(error, display);
    }
    try {
      try {
        await handle.writeFile(content);
        if (mode !== undefined) await handle.chmod(mode);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, throughDescriptor(dir, name));
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw fsError(error, display);
    }
    // Make the rename itself durable; not every platform lets a directory be fsynced.
    await dir.sync().catch(() => undefined);
  } finally {
    await dir.close();
  }
}

/** `a.txt` → `1 line` style counting with the right plural. */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
