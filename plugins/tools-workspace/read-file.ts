/**
 * `read_file`: a numbered window of a text file's lines. The file is streamed in chunks: lines
 * before the window and after it are only counted (bytes scanned for newlines), never decoded or
 * kept, so a multi-gigabyte log costs memory for the window alone.
 */
import { defineTool, HarnessError, z, type ToolDefinition } from '../../runtime/index.ts';
import { binaryError, fsError, looksBinary, plural, SNIFF_BYTES, statPath } from './files.ts';
import type { WorkspaceToolsConfig } from './config.ts';
import { openConfined, openWorkspace } from './paths.ts';

const CHUNK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;

export const readFileInput = z.strictObject({
  path: z.string().describe('File to read: relative to the workspace root, or absolute inside it.'),
  offset: z.number().int().min(1).optional().describe('1-based line number to start at (default 1).'),
  limit: z.number().int().min(1).optional().describe('How many lines to read at most (default 2000).'),
});

export function readFileTool(config: WorkspaceToolsConfig): ToolDefinition<z.output<typeof readFileInput>> {
  const { maxBytes, defaultLimit, maxLineChars, maxOutputChars } = config.read;
  return defineTool({
    name: 'read_file',
    description:
      `Read a text file from the workspace. Returns numbered lines ("N<tab>text"), ${defaultLimit} lines from the start by default; ` +
      'a footer gives the total line count and the offset to read the next window. Refuses binary files.',
    input: readFileInput,
    permission: 'read',
    maxOutputChars,
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    async execute(input, context) {
      const workspace = await openWorkspace(config.root, context.cwd);
      const { real, rel } = await workspace.resolve(input.path);
      const info = await statPath(real, rel, 'file');
      const offset = input.offset ?? 1;
      const limit = input.limit ?? defaultLimit;
      // Room for the numbers and tabs of the window; the footer goes in notes, outside the cap.
      const width = String(offset + limit - 1).length;
      const charBudget = maxOutputChars > 0 ? maxOutputChars : Infinity;

      const handle = await openConfined(workspace.root, real, rel).catch((error: unknown) => {
        throw fsError(error, rel);
      });
      const shown: string[] = [];
      let cutLineCount = 0;
      let stoppedBy: 'limit' | 'bytes' | 'chars' | null = null;
      let windowBytes = 0;
      let windowChars = 0;
      let lineNumber = 1; // the line the scan is in
      let parts: Buffer[] = []; // bytes of the current line, while it is in the window
      let partBytes = 0;
      let lastByte = -1;
      const lineByteCap = maxLineChars * 4 + 4;
      const collecting = () => stoppedBy === null && lineNumber >= offset;

      const finishLine = () => {
        if (!collecting()) return;
        const bytes = Buffer.concat(parts, Math.min(partBytes, lineByteCap));
        if (bytes.includes(0)) throw binaryError(rel);
        let text: string;
        try {
          text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: partBytes > lineByteCap });
        } catch {
          throw binaryError(rel);
        }
        if (text.endsWith('\r')) text = text.slice(0, -1);
        if (text.length > maxLineChars || partBytes > lineByteCap) {
          text = `${text.slice(0, maxLineChars)}… [line cut at ${maxLineChars} characters]`;
          cutLineCount += 1;
        }
        const cost = width + 1 + text.length + 1;
        if (shown.length > 0 && (windowChars + cost > charBudget || windowBytes + partBytes > maxBytes)) {
          stoppedBy = windowChars + cost > charBudget ? 'chars' : 'bytes';
          return;
        }
        shown.push(text);
        windowChars += cost;
        windowBytes += partBytes + 1;
        if (shown.length >= limit) stoppedBy = 'limit';
      };

      try {
        const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
        let position = 0;
        for (;;) {
          if (context.signal.aborted) throw context.signal.reason;
          const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position);
          if (bytesRead === 0) break;
          const chunk = buffer.subarray(0, bytesRead);
          if (position === 0 && looksBinary(chunk.subarray(0, SNIFF_BYTES), info.size > SNIFF_BYTES)) throw binaryError(rel);
          position += bytesRead;
          lastByte = chunk[bytesRead - 1]!;
          let start = 0;
          for (;;) {
            const newline = chunk.indexOf(NEWLINE, start);
            const end = newline === -1 ? bytesRead : newline;
            if (collecting() && end > start) {
              if (partBytes < lineByteCap) parts.push(Buffer.from(chunk.subarray(start, end)));
              partBytes += end - start;
            }
            if (newline === -1) break;
            finishLine();
            parts = [];
            partBytes = 0;
            lineNumber += 1;
            start = newline + 1;
          }
        }
        // A last line without a trailing newline.
        if (lastByte !== -1 && lastByte !== NEWLINE) {
          finishLine();
          lineNumber += 1;
        }
      } finally {
        await handle.close();
      }

      const totalLines = lineNumber - 1;
      if (totalLines === 0) return { content: `(${rel} is empty)`, notes: ['[0 lines]'] };
      if (offset > totalLines) {
        throw new HarnessError('OFFSET_OUT_OF_RANGE', `offset ${offset} is past the end of ${rel}, which has ${plural(totalLines, 'line')}.`);
      }
      const lastShown = offset + shown.length - 1;
      const numberWidth = String(lastShown).length;
      const content = shown.map((text, index) => `${String(offset + index).padStart(numberWidth)}\t${text}`).join('\n');
      const notes: string[] = [];
      if (lastShown >= totalLines) notes.push(`[lines ${offset}-${lastShown} of ${totalLines}; end of file]`);
      else {
        const why = stoppedBy === 'chars' || stoppedBy === 'bytes' ? ' (the output size limit was reached)' : '';
        notes.push(`[lines ${offset}-${lastShown} of ${totalLines}${why}; to read more, call read_file with offset=${lastShown + 1}]`);
      }
      if (cutLineCount > 0) notes.push(`[${plural(cutLineCount, 'line')} longer than ${maxLineChars} characters ${cutLineCount === 1 ? 'was' : 'were'} cut]`);
      return { content, notes };
    },
  });
}
