/**
 * Workspace confinement: every path a tool touches is resolved through symlinks and must stay inside
 * the workspace root. A path that does not exist yet (write_file to a new file) is resolved through the
 * realpath of its longest existing prefix; a dangling symlink on the way is followed to its target.
 * Tools then operate on the resolved real path, so what was checked is what is touched.
 */
import { lstat, readlink, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { HarnessError } from '../../runtime/index.ts';

/** Symlink hops followed by hand (dangling links) before giving up, like the kernel's ELOOP. */
const MAX_LINK_HOPS = 40;

export interface ResolvedPath {
  /** The real absolute path (symlinks resolved; missing tail segments appended). */
  readonly real: string;
  /** Relative to the workspace root, with `/` separators; `.` for the root itself. */
  readonly rel: string;
}

export interface Workspace {
  /** The real absolute path of the workspace root. */
  readonly root: string;
  /**
   * Resolves a path argument (relative to the root, or absolute) to a real path inside the root.
   * @throws HarnessError `PATH_OUTSIDE_WORKSPACE` naming the path and the root.
   */
  resolve(path: string): Promise<ResolvedPath>;
  /** The display form of a real path inside the root. */
  relativize(real: string): string;
}

/**
 * The workspace of one call: `configuredRoot` when set, else the session's cwd.
 * @throws HarnessError `WORKSPACE_NOT_FOUND` when the root is not an existing directory.
 */
export async function openWorkspace(configuredRoot: string | undefined, cwd: string): Promise<Workspace> {
  const wanted = resolve(configuredRoot ?? cwd);
  let root: string;
  try {
    root = await realpath(wanted);
    if (!(await stat(root)).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new HarnessError('WORKSPACE_NOT_FOUND', `The workspace root ${wanted} does not exist or is not a directory.`);
  }
  const relativize = (real: string) => {
    const rel = relative(root, real);
    return rel === '' ? '.' : rel.split(sep).join('/');
  };
  return {
    root,
    relativize,
    async resolve(path: string) {
      if (typeof path !== 'string' || path.trim() === '') {
        throw new HarnessError('INVALID_PATH', 'The path is empty; give a path relative to the workspace root.');
      }
      if (path.includes('\0')) throw new HarnessError('INVALID_PATH', `The path ${JSON.stringify(path)} contains a NUL character.`);
      const absolute = isAbsolute(path) ? resolve(path) : resolve(root, path);
      const real = await realpathLoose(absolute, 0);
      if (!isInside(root, real)) {
        const via = real === absolute ? '' : ` (it resolves to ${real})`;
        throw new HarnessError('PATH_OUTSIDE_WORKSPACE', `The path "${path}" is outside the workspace ${root}${via}. Only paths inside the workspace can be used.`, {
          details: { path, resolved: real, root },
        });
      }
      return { real, rel: relativize(real) };
    },
  };
}

export function isInside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** `realpath` that also works for paths that do not exist (yet). */
async function realpathLoose(absolute: string, hops: number): Promise<string> {
  try {
    return await realpath(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new HarnessError('INVALID_PATH', `The path ${absolute} has a symlink loop.`);
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
  }
  const info = await lstat(absolute).catch(() => undefined);
  if (info?.isSymbolicLink()) {
    // A dangling symlink: what a write would create is its target, so that is what must be inside.
    if (hops >= MAX_LINK_HOPS) throw new HarnessError('INVALID_PATH', `The path ${absolute} has a symlink loop.`);
    const target = await readlink(absolute);
    return realpathLoose(resolve(dirname(absolute), target), hops + 1);
  }
  const parent = dirname(absolute);
  if (parent === absolute) return absolute;
  return join(await realpathLoose(parent, hops), basename(absolute));
}
