/**
 * `list_dir`: a directory's entries, recursively to a depth, as paths relative to the workspace root.
 * Directories end in `/`, symlinks in `@` (with their target; never followed). `.git` and
 * `node_modules` are listed but not expanded unless asked.
 */
import type { Dirent } from 'node:fs';
import { readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { defineTool, z, type ToolDefinition } from '../../runtime/index.ts';
import type { WorkspaceToolsConfig } from './config.ts';
import { fsError, statPath } from './files.ts';
import { openWorkspace, readdirConfined } from './paths.ts';

export const IGNORED_DIRS: ReadonlySet<string> = new Set(['.git', 'node_modules']);
export const MAX_LIST_DEPTH = 5;

export const listDirInput = z.strictObject({
  path: z.string().optional().describe('Directory to list: relative to the workspace root, or absolute inside it (default: the root).'),
  depth: z.number().int().min(1).max(MAX_LIST_DEPTH).optional().describe(`How many levels to descend (1 = direct entries only; default 1, max ${MAX_LIST_DEPTH}).`),
  include_ignored: z.boolean().optional().describe('Also expand .git and node_modules (default false).'),
});

export function listDirTool(config: WorkspaceToolsConfig): ToolDefinition<z.output<typeof listDirInput>> {
  const maxEntries = config.listDir.maxEntries;
  return defineTool({
    name: 'list_dir',
    description:
      'List a workspace directory, optionally recursively (depth). Paths are relative to the workspace root; directories end in "/", ' +
      'symlinks in "@". The contents of .git and node_modules are not expanded unless include_ignored is true.',
    input: listDirInput,
    permission: 'read',
    maxOutputChars: config.maxOutputChars,
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    async execute(input, context) {
      const workspace = await openWorkspace(config.root, context.cwd);
      const { real, rel } = await workspace.resolve(input.path ?? '.');
      await statPath(real, rel, 'directory');
      const depth = input.depth ?? 1;
      const lines: string[] = [];
      let truncated = false;
      const prefix = rel === '.' ? '' : `${rel}/`;

      const walk = async (dir: string, relDir: string, level: number): Promise<void> => {
        if (context.signal.aborted) throw context.signal.reason;
        let entries: Dirent[];
        try {
          entries = await readdirConfined(workspace.root, dir, rel);
        } catch (error) {
          if (level === 1) throw fsError(error, rel);
          lines[lines.length - 1] += ' (unreadable)';
          return;
        }
        entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        for (const entry of entries) {
          if (lines.length >= maxEntries) {
            truncated = true;
            return;
          }
          const path = `${relDir}${entry.name}`;
          const full = join(dir, entry.name);
          if (entry.isSymbolicLink()) {
            const target = await readlink(full).catch(() => '?');
            lines.push(`${path}@ -> ${target}`);
          } else if (entry.isDirectory()) {
            const skipped = IGNORED_DIRS.has(entry.name) && input.include_ignored !== true;
            lines.push(skipped && level < depth ? `${path}/ (not expanded)` : `${path}/`);
            if (!skipped && level < depth) await walk(full, `${path}/`, level + 1);
          } else {
            lines.push(path);
          }
          if (truncated) return;
        }
      };
      await walk(real, prefix, 1);

      if (lines.length === 0) return `${rel === '.' ? 'The workspace root' : `${rel}/`} is empty.`;
      const notes = truncated ? [`[listing stopped at ${maxEntries} entries; list a subdirectory or use a smaller depth]`] : [];
      return { content: lines.join('\n'), notes };
    },
  });
}
