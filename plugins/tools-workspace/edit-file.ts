/**
 * `edit_file`: exact string replacement in a text file, written atomically; answers with a unified
 * diff of the change (jsdiff).
 */
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff';
import { defineTool, HarnessError, z, type ToolDefinition } from '../../runtime/index.ts';
import type { WorkspaceToolsConfig } from './config.ts';
import { plural, readTextFile, writeAtomic } from './files.ts';
import { openWorkspace } from './paths.ts';

export const editFileInput = z.strictObject({
  path: z.string().describe('File to edit: relative to the workspace root, or absolute inside it.'),
  old_string: z.string().min(1).describe('The exact text to replace, including whitespace and indentation. It must occur exactly once unless replace_all is true.'),
  new_string: z.string().describe('The text to put in its place.'),
  replace_all: z.boolean().optional().describe('Replace every occurrence of old_string (default false).'),
});

export function editFileTool(config: WorkspaceToolsConfig): ToolDefinition<z.output<typeof editFileInput>> {
  return defineTool({
    name: 'edit_file',
    description:
      'Replace exact text in a workspace file. old_string must match the file exactly (whitespace included) and occur exactly once, ' +
      'unless replace_all is true. Returns a unified diff of the change.',
    input: editFileInput,
    permission: 'write',
    maxOutputChars: config.maxOutputChars,
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    async execute(input, context) {
      const workspace = await openWorkspace(config.root, context.cwd);
      const { real, rel } = await workspace.resolve(input.path);
      const { text: before, info } = await readTextFile(workspace.root, real, rel, config.write.maxBytes);
      if (input.old_string === input.new_string) {
        throw new HarnessError('NO_CHANGE', 'old_string and new_string are identical; there is nothing to change.');
      }
      let oldString = input.old_string;
      let newString = input.new_string;
      let positions = occurrences(before, oldString);
      // A file with CRLF line ends, and an old_string written with LF ones (as read_file shows it).
      if (positions.length === 0 && before.includes('\r\n') && oldString.includes('\n') && !oldString.includes('\r')) {
        oldString = oldString.replace(/\n/g, '\r\n');
        newString = newString.replace(/\r?\n/g, '\r\n');
        positions = occurrences(before, oldString);
      }
      if (positions.length === 0) {
        throw new HarnessError('NO_MATCH', `old_string was not found in ${rel}. It must match the file exactly, whitespace and indentation included; read the file again to copy the exact text.`);
      }
      if (positions.length > 1 && input.replace_all !== true) {
        const lines = positions.slice(0, 10).map((at) => lineOf(before, at));
        const more = positions.length > lines.length ? ', …' : '';
        throw new HarnessError(
          'AMBIGUOUS_MATCH',
          `old_string occurs ${positions.length} times in ${rel} (at lines ${lines.join(', ')}${more}). Include more surrounding lines to make it unique, or set replace_all: true to replace every occurrence.`,
          { details: { matchCount: positions.length } },
        );
      }
      let after = '';
      let from = 0;
      for (const at of positions) {
        after += before.slice(from, at) + newString;
        from = at + oldString.length;
      }
      after += before.slice(from);
      const afterBytes = Buffer.byteLength(after, 'utf8');
      if (afterBytes > config.write.maxBytes) {
        throw new HarnessError('CONTENT_TOO_LARGE', `The edited ${rel} would be ${afterBytes} bytes, over the ${config.write.maxBytes}-byte limit.`);
      }
      if (context.signal.aborted) throw context.signal.reason;
      await writeAtomic(workspace.root, real, rel, after, info.mode & 0o7777);
      const diff = createTwoFilesPatch(`a/${rel}`, `b/${rel}`, before, after, undefined, undefined, { context: 3, headerOptions: FILE_HEADERS_ONLY });
      return `Edited ${rel}: replaced ${plural(positions.length, 'occurrence')}.\n${diff}`;
    },
  });
}

/** Start indexes of the non-overlapping occurrences of `needle`. */
function occurrences(haystack: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) found.push(at);
  return found;
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let at = text.indexOf('\n'); at !== -1 && at < index; at = text.indexOf('\n', at + 1)) line += 1;
  return line;
}
