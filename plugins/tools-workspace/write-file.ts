/**
 * `write_file`: creates or replaces a whole file, atomically (temp file, fsync, rename).
 */
import { stat } from 'node:fs/promises';
import { defineTool, HarnessError, z, type ToolDefinition } from '../../runtime/index.ts';
import type { WorkspaceToolsConfig } from './config.ts';
import { fsError, plural, writeAtomic } from './files.ts';
import { openWorkspace } from './paths.ts';

export const writeFileInput = z.strictObject({
  path: z.string().describe('File to write: relative to the workspace root, or absolute inside it. Missing parent directories are created.'),
  content: z.string().describe('The complete new content of the file.'),
});

export function writeFileTool(config: WorkspaceToolsConfig): ToolDefinition<z.output<typeof writeFileInput>> {
  return defineTool({
    name: 'write_file',
    description: 'Create a file, or replace the whole content of an existing one, in the workspace. The write is atomic. ' + 'To change part of an existing file, prefer edit_file.',
    input: writeFileInput,
    permission: 'write',
    maxOutputChars: config.maxOutputChars,
    ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
    async execute(input, context) {
      const workspace = await openWorkspace(config.root, context.cwd);
      const { real, rel } = await workspace.resolve(input.path);
      const bytes = Buffer.from(input.content, 'utf8');
      if (bytes.length > config.write.maxBytes) {
        throw new HarnessError('CONTENT_TOO_LARGE', `The content for ${rel} is ${bytes.length} bytes, over the ${config.write.maxBytes}-byte limit.`);
      }
      const existing = await stat(real).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        if (error.code === 'ENOTDIR') throw new HarnessError('NOT_A_DIRECTORY', `A parent of ${rel} is a file, not a directory.`);
        throw fsError(error, rel);
      });
      if (existing?.isDirectory()) throw new HarnessError('NOT_A_FILE', `${rel} is a directory; give a file path.`);
      if (existing !== undefined && !existing.isFile()) throw new HarnessError('NOT_A_FILE', `${rel} is not a regular file.`);
      if (context.signal.aborted) throw context.signal.reason;
      await writeAtomic(workspace.root, real, rel, bytes, existing ? existing.mode & 0o7777 : undefined);
      return existing === undefined ? `Created ${rel} (${plural(bytes.length, 'byte')}).` : `Replaced ${rel} (${plural(bytes.length, 'byte')}; it had ${plural(existing.size, 'byte')}).`;
    },
  });
}
