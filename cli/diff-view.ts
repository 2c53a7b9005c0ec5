/**
 * File edits as unified diffs (jsdiff, as `edit_file` itself answers): the change an `edit_file`
 * call would make, for its approval question, and colouring for a diff in a tool result — `-` lines
 * red, `+` lines green, `@@` hunk headers cyan. Without colour the `-`/`+`/`@@` marks carry it.
 */
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff';
import type { Io } from './env.ts';
import { printable } from './format.ts';

/** Files larger than this are not read to show an edit in context (the change alone is shown). */
const CONTEXT_FILE_BYTES = 4 * 1024 * 1024;

/** A text that is (or ends with) a unified diff: `--- ` and `+++ ` header lines, then a hunk. */
export function hasUnifiedDiff(text: string): boolean {
  return /^--- .*\n\+\+\+ .*\n@@ /m.test(text);
}

/** One line of a diff, made printable and coloured by its mark. */
export function diffLine(line: string, io: Io): string {
  const { c } = io;
  const shown = printable(line);
  if (line.startsWith('+++ ') || line.startsWith('--- ')) return c.bold(shown);
  if (line.startsWith('@@')) return c.cyan(shown);
  if (line.startsWith('+')) return c.green(shown);
  if (line.startsWith('-')) return c.red(shown);
  return c.dim(shown);
}

/** The input of an `edit_file` call, when it has the shape the tool takes. */
export function editInput(input: unknown): { path: string; old_string: string; new_string: string; replace_all?: boolean } | undefined {
  const value = input as Record<string, unknown> | undefined;
  if (value === undefined || typeof value !== 'object' || value === null) return undefined;
  if (typeof value.path !== 'string' || typeof value.old_string !== 'string' || typeof value.new_string !== 'string') return undefined;
  return { path: value.path, old_string: value.old_string, new_string: value.new_string, ...(value.replace_all === true ? { replace_all: true } : {}) };
}

/**
 * The unified diff an `edit_file` call would make: against the file in `workspace` when it can be
 * read there and `old_string` is found (real line numbers, 3 lines of context), else of the
 * replaced text alone (`inContext: false`, line numbers counted within it).
 */
export function editDiff(edit: NonNullable<ReturnType<typeof editInput>>, workspace: string | undefined): { diff: string; inContext: boolean } {
  const name = edit.path.replace(/^\.\//, '');
  const before = workspace === undefined ? undefined : readInWorkspace(workspace, edit.path);
  if (before?.includes(edit.old_string)) {
    const after = edit.replace_all ? before.split(edit.old_string).join(edit.new_string) : before.replace(edit.old_string, () => edit.new_string);
    return { diff: patch(name, before, after), inContext: true };
  }
  return { diff: patch(name, withNewline(edit.old_string), withNewline(edit.new_string)), inContext: false };
}

function patch(name: string, before: string, after: string): string {
  return createTwoFilesPatch(`a/${name}`, `b/${name}`, before, after, undefined, undefined, { context: 3, headerOptions: FILE_HEADERS_ONLY }).replace(/\n$/, '');
}

function withNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

/** The text of a file inside the workspace (never outside it, symlinks followed), or undefined. */
function readInWorkspace(workspace: string, path: string): string | undefined {
  try {
    const root = realpathSync(workspace);
    const full = resolve(root, path);
    if (!existsSync(full)) return undefined;
    const real = realpathSync(full);
    const rel = relative(root, real);
    if (rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) return undefined;
    if (statSync(real).size > CONTEXT_FILE_BYTES) return undefined;
    return readFileSync(real, 'utf8');
  } catch {
    return undefined;
  }
}
