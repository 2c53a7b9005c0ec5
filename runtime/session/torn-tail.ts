/**
 * The one sanctioned cut of a journal file (DESIGN "Durability"): a torn last line is moved aside,
 * never silently dropped.
 */
import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync } from 'node:fs';
import { dirname } from 'node:path';
import { fsyncDir, writeAllSync } from './fs.ts';

/**
 * Moves the bytes from `start` to the end of the file into a new sidecar file
 * `<path>.torn-<ms>`, fsyncs it (and its directory), and only then truncates the journal to
 * `start` and fsyncs it.
 */
export function moveTornTail(path: string, start: number): { sidecarPath: string; byteCount: number } {
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
