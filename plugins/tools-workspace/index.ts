/**
 * tools-workspace: the workspace tools (issue #6 item 5; seed 000 "内层工具契约" — loose tools, tight
 * frame: these tools only produce output, the runtime's close-out does timeout, truncation and errors).
 *
 * - `read_file` (read): a numbered line window of a text file; refuses binary files.
 * - `write_file` (write): creates or replaces a file atomically.
 * - `edit_file` (write): exact, unique string replacement; answers with a unified diff.
 * - `list_dir` (read): entries to a depth, with `dir/` and `symlink@` markers.
 * - `grep` (read): JavaScript regex search, `path:line:text`.
 * - `exec_command` (write): `<shell> -c` in the workspace root, output streamed, process group killed
 *   on timeout or abort.
 *
 * The workspace root is `config.root` when set, else each call's session `cwd` (so one plugin serves
 * sessions in different workspaces). Every path argument is confined to the root after resolving
 * symlinks; an escape is refused with `PATH_OUTSIDE_WORKSPACE`. Errors are `HarnessError`s with stable
 * codes (`FILE_NOT_FOUND`, `BINARY_FILE`, `NO_MATCH`, `AMBIGUOUS_MATCH`, …) that the close-out turns
 * into `isError` results.
 */
import { definePlugin, type ToolDefinition } from '../../runtime/index.ts';
import { TOOL_NAMES, workspaceToolsConfig, type WorkspaceToolName, type WorkspaceToolsConfig } from './config.ts';
import { editFileTool } from './edit-file.ts';
import { execCommandTool } from './exec-command.ts';
import { grepTool } from './grep.ts';
import { listDirTool } from './list-dir.ts';
import { readFileTool } from './read-file.ts';
import { writeFileTool } from './write-file.ts';

export { TOOL_NAMES, workspaceToolsConfig, type WorkspaceToolName, type WorkspaceToolsConfig } from './config.ts';
export { openWorkspace, type Workspace } from './paths.ts';

/** Builds the enabled tools for a parsed config (what the plugin registers). */
export function createWorkspaceTools(config: WorkspaceToolsConfig): ToolDefinition[] {
  const factories: Record<WorkspaceToolName, () => ToolDefinition> = {
    read_file: () => readFileTool(config),
    write_file: () => writeFileTool(config),
    edit_file: () => editFileTool(config),
    list_dir: () => listDirTool(config),
    grep: () => grepTool(config),
    exec_command: () => execCommandTool(config),
  };
  const enabled = new Set(config.tools ?? TOOL_NAMES);
  return TOOL_NAMES.filter((name) => enabled.has(name)).map((name) => factories[name]());
}

export default definePlugin({
  name: 'tools-workspace',
  config: workspaceToolsConfig,
  setup(ctx, config) {
    // Registrations are undone on unload or reload. A command already running is not killed then:
    // it ends under its own timeout or abort (and dies with the harness process at the latest).
    for (const tool of createWorkspaceTools(config)) ctx.tools.register(tool);
  },
});
