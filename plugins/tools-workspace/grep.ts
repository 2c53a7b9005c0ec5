/**
 * `grep`: searches text files for a JavaScript regular expression, in pure Node. Walks the directory
 * in sorted order without following symlinks; skips `.git`, `node_modules`, binary files and files
 * over the size limit.
 */
import type { Dirent } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { defineTool, HarnessError, z, type ToolDefinition } from '../../runtime/index.ts';
import type { WorkspaceToolsConfig } from './config.ts';
import { fsError, looksBinary, plural } from './files.ts';
import { globMatcher } from './glob.ts';
import { IGNORED_DIRS } from './list-dir.ts';
import { openWorkspace, readdirConfined, readFileConfined } from './paths.ts';

const MAX_RESULTS_LIMIT = 1000;

export const grepInput = z.strictObject({
  pattern: z.string().min(1).describe('JavaScript regular expression to search for, matched against each line (e.g. "function\\s+\\w+").'),
  path: z.string().optional().describe('File or directory to search: relative to the workspace root, or absolute inside it (default: the root).'),
  glob: z.string().optional().describe('Only search files matching this glob, e.g. "*.ts" (file name) or "src/**/*.ts" (path under the searched directory).'),
  ignore_case: z.boolean().optional().describe('Match case-insensitively (default false).'),
  max_results: z.number().int().min(1).max(MAX_RESULTS_LIMIT).optional().describe('Stop after this many matching lines (default 100).'),
});

export function grepTool(config: WorkspaceToolsConfig): ToolDefinition<z.output<typeof grepInput>> {
  const { defaultMaxResults, maxFileBytes, maxLineChars } = config.grep;
  return defineTool({
    name: 'grep',
    description:
      'Search workspace files for a regular expression (JavaScript syntax). Returns matching lines as "path:line:text", paths relative to the ' +
      'workspace root. Skips binary files, .git and node_modules; symlinks are not followed.',
    input: grepInput,
    permission: 'read',
    maxOutputChars: config.maxOutputChars,
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    async execute(input, context) {
      let regex: RegExp;
      try {
        regex = new RegExp(input.pattern, input.ignore_case ? 'i' : '');
      } catch (error) {
        throw new HarnessError('INVALID_PATTERN', `The pattern is not a valid JavaScript regular expression: ${(error as Error).message}`);
      }
      const matchesGlob = input.glob === undefined ? () => true : globMatcher(input.glob);
      const maxResults = Math.min(input.max_results ?? defaultMaxResults, MAX_RESULTS_LIMIT);
      const workspace = await openWorkspace(config.root, context.cwd);
      const { real, rel } = await workspace.resolve(input.path ?? '.');
      const info = await stat(real).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT' || error.code === 'ENOTDIR') throw new HarnessError('FILE_NOT_FOUND', `${rel} does not exist.`);
        throw fsError(error, rel);
      });

      const results: string[] = [];
      let truncated = false;
      let fileCount = 0;
      let skippedLargeCount = 0;

      const searchFile = async (file: string, display: string): Promise<void> => {
        let bytes: Buffer;
        try {
          if ((await stat(file)).size > maxFileBytes) {
            skippedLargeCount += 1;
            return;
          }
          bytes = await readFileConfined(workspace.root, file, display);
        } catch {
          return; // vanished or unreadable: nothing to report for a search
        }
        if (looksBinary(bytes, false)) return;
        fileCount += 1;
        const lines = bytes.toString('utf8').split('\n');
        if (lines.at(-1) === '') lines.pop();
        for (let index = 0; index < lines.length; index++) {
          let line = lines[index]!;
          if (line.endsWith('\r')) line = line.slice(0, -1);
          if (!regex.test(line)) continue;
          if (results.length >= maxResults) {
            truncated = true;
            return;
          }
          const text = line.length > maxLineChars ? `${line.slice(0, maxLineChars)}… [line cut]` : line;
          results.push(`${display}:${index + 1}:${text}`);
        }
      };

      const walk = async (dir: string, relDir: string): Promise<void> => {
        if (context.signal.aborted) throw context.signal.reason;
        let entries: Dirent[];
        try {
          entries = await readdirConfined(workspace.root, dir, rel);
        } catch (error) {
          if (relDir === '') throw fsError(error, rel);
          return;
        }
        entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        for (const entry of entries) {
          if (truncated) return;
          const full = join(dir, entry.name);
          const relPath = `${relDir}${entry.name}`;
          if (entry.isDirectory()) {
            if (!IGNORED_DIRS.has(entry.name)) await walk(full, `${relPath}/`);
          } else if (entry.isFile() && matchesGlob(relPath)) {
            await searchFile(full, workspace.relativize(full));
          }
        }
      };

      if (info.isDirectory()) await walk(real, '');
      else if (info.isFile()) await searchFile(real, rel);
      else throw new HarnessError('NOT_A_FILE', `${rel} is neither a file nor a directory.`);

      const notes: string[] = [];
      if (truncated) notes.push(`[stopped after ${plural(maxResults, 'match', 'matches')}; narrow the pattern, path or glob, or raise max_results (up to ${MAX_RESULTS_LIMIT})]`);
      if (skippedLargeCount > 0) notes.push(`[${plural(skippedLargeCount, 'file')} over ${maxFileBytes} bytes ${skippedLargeCount === 1 ? 'was' : 'were'} skipped]`);
      if (results.length === 0) {
        return { content: `No matches for /${input.pattern}/${input.ignore_case ? 'i' : ''} in ${rel} (${plural(fileCount, 'text file')} searched).`, notes };
      }
      return { content: results.join('\n'), notes };
    },
  });
}
