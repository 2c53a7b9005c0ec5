/**
 * Streaming line reading for journals: the file is read in fixed-size chunks and split on `\n`,
 * so memory stays bounded by the chunk size plus the longest line, whatever the file size.
 */
import { open } from 'node:fs/promises';

/** One line as read: its text (without `\n`), its 1-based number and its byte range. */
export interface RawLine {
  readonly text: string;
  readonly lineNumber: number;
  /** Byte offset of the line's first byte. */
  readonly start: number;
  /** Byte offset just past the line's `\n` (or past its last byte when unterminated). */
  readonly end: number;
  /** False for a last line with no `\n` (a torn write, or a file being written). */
  readonly terminated: boolean;
}

const NEWLINE = 0x0a;
export const READ_CHUNK_BYTES = 1 << 20;

/**
 * Reads `path` in chunks and yields the complete lines of each chunk as one batch (pull-based:
 * the next chunk is read only when the consumer asks, so memory is bounded by one chunk plus the
 * longest line). The last batch may end with an unterminated line.
 */
export async function* lineBatches(path: string, options: { chunkBytes?: number } = {}): AsyncGenerator<RawLine[], number, undefined> {
  const handle = await open(path, 'r');
  try {
    const chunkBytes = options.chunkBytes ?? READ_CHUNK_BYTES;
    let buffer = Buffer.allocUnsafe(chunkBytes);
    let filled = 0; // bytes of `buffer` holding unread data
    let offset = 0; // file offset of buffer[0]
    let lineNumber = 0;
    for (;;) {
      if (filled === buffer.length) {
        // One line longer than the buffer: grow it.
        const bigger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(bigger, 0, 0, filled);
        buffer = bigger;
      }
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, offset + filled);
      const eof = bytesRead === 0;
      filled += bytesRead;
      const lines: RawLine[] = [];
      let from = 0;
      const view = filled === buffer.length ? buffer : buffer.subarray(0, filled);
      for (;;) {
        const at = view.indexOf(NEWLINE, from);
        if (at === -1) break;
        lineNumber++;
        lines.push({ text: buffer.toString('utf8', from, at), lineNumber, start: offset + from, end: offset + at + 1, terminated: true });
        from = at + 1;
      }
      if (eof) {
        if (from < filled) {
          lineNumber++;
          lines.push({ text: buffer.toString('utf8', from, filled), lineNumber, start: offset + from, end: offset + filled, terminated: false });
        }
        if (lines.length > 0) yield lines;
        return offset + filled;
      }
      if (lines.length > 0) yield lines;
      // Move the unfinished line to the front.
      if (from > 0) {
        buffer.copy(buffer, 0, from, filled);
        offset += from;
        filled -= from;
      }
    }
  } finally {
    await handle.close();
  }
}

/**
 * Reads `path` line by line, calling `onLine` for each line in order (return `false` to stop).
 * Resolves with the bytes consumed and whether `onLine` stopped the scan.
 */
export async function scanLines(path: string, onLine: (line: RawLine) => boolean | void, options: { chunkBytes?: number } = {}): Promise<{ size: number; stopped: boolean }> {
  let size = 0;
  for await (const lines of lineBatches(path, options)) {
    for (const line of lines) {
      size = line.end;
      if (onLine(line) === false) return { size, stopped: true };
    }
  }
  return { size, stopped: false };
}

/**
 * Reads the first line of a file (up to `maxBytes`), without reading the rest.
 * Resolves `undefined` for an empty file; `terminated` says whether a `\n` ended it.
 */
export async function readFirstLine(path: string, maxBytes = 16 << 20): Promise<{ text: string; terminated: boolean } | undefined> {
  const handle = await open(path, 'r');
  try {
    let buffer = Buffer.allocUnsafe(64 * 1024);
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      const at = buffer.indexOf(NEWLINE, filled);
      filled += bytesRead;
      if (at !== -1 && at < filled) return { text: buffer.toString('utf8', 0, at), terminated: true };
      if (bytesRead === 0) return filled === 0 ? undefined : { text: buffer.toString('utf8', 0, filled), terminated: false };
      if (filled === buffer.length) {
        if (buffer.length >= maxBytes) return { text: buffer.toString('utf8', 0, filled), terminated: false };
        const bigger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(bigger, 0, 0, filled);
        buffer = bigger;
      }
    }
  } finally {
    await handle.close();
  }
}
