/**
 * Workspace confinement: every path a tool touches is resolved through symlinks and must stay inside
 * the workspace root. A path that does not exist yet (write_file to a new file) is resolved through the
 * realpath of its longest existing prefix; a dangling symlink on the way is followed to its target.
 * Tools then operate on the resolved real path, so what was checked is what is touched.
 */
import { constants, existsSync, type Dirent } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
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

/**
 * Race-free use of a checked path (Linux): `resolve` checks a path *string*, but another process in
 * the workspace can swap a directory on it for a symlink between the check and the use. So a file
 * is opened with `O_NOFOLLOW` and the opened descriptor is verified — `readlink /proc/self/fd/N`
 * names what was really opened — and used from then on; a file is created through its parent
 * directory's verified descriptor (`/proc/self/fd/<dirfd>/<name>`, `O_CREAT|O_EXCL|O_NOFOLLOW`), so
 * the path cannot change between check and use. Without `/proc/self/fd` (not Linux) the checks fall
 * back to the path-based ones above.
 */
const PROC_FD = existsSync('/proc/self/fd');

function swapped(display: string, root: string, actual: string): HarnessError {
  return new HarnessError(
    'PATH_OUTSIDE_WORKSPACE',
    `The path "${display}" changed while it was being used: it now leads to ${actual}, outside the workspace ${root}. Only paths inside the workspace can be used.`,
    {
      details: { path: display, resolved: actual, root },
    },
  );
}

/** Checks that an open descriptor is inside `root`. @throws HarnessError `PATH_OUTSIDE_WORKSPACE`. */
export async function verifyDescriptor(root: string, fd: number, display: string): Promise<void> {
  if (!PROC_FD) return;
  const actual = await readlink(`/proc/self/fd/${fd}`);
  if (!isInside(root, actual)) throw swapped(display, root, actual);
}

/** `/proc/self/fd/<fd>/<name>`: a name inside an open directory, reached through its descriptor. */
export function throughDescriptor(dir: FileHandle, name: string): string {
  return PROC_FD ? `/proc/self/fd/${dir.fd}/${name}` : join(dirPaths.get(dir) ?? '.', name);
}

const dirPaths = new WeakMap<FileHandle, string>();

/**
 * Opens `real` (a path `resolve` returned) without following a symlink at its end and verifies the
 * descriptor is inside `root`. A symlink there now (ELOOP) is a swap: `PATH_OUTSIDE_WORKSPACE`.
 */
export async function openConfined(root: string, real: string, display: string, flags: number = constants.O_RDONLY): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(real, flags | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw swapped(display, root, `a symlink at ${real}`);
    throw error;
  }
  try {
    await verifyDescriptor(root, handle.fd, display);
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}

/**
 * Opens the directory `realDir` (inside `root`), creating missing levels one at a time, each through
 * its parent's verified descriptor, so no level can be swapped for a symlink on the way.
 */
export async function openDirectoryConfined(root: string, realDir: string, display: string, create: boolean): Promise<FileHandle> {
  const flags = constants.O_RDONLY | constants.O_DIRECTORY;
  const rel = relative(root, realDir);
  const segments = rel === '' ? [] : rel.split(sep);
  let handle = await openConfined(root, root, '.', flags);
  dirPaths.set(handle, root);
  let path = root;
  try {
    for (const segment of segments) {
      const next = throughDescriptor(handle, segment);
      path = join(path, segment);
      if (create)
        await mkdir(next).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'EEXIST') throw error;
        });
      const child = await openConfined(root, next, display, flags);
      dirPaths.set(child, path);
      await handle.close();
      handle = child;
    }
    return handle;
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

/** The entries of the directory `real`, read through its verified descriptor. */
export async function readdirConfined(root: string, real: string, display: string): Promise<Dirent[]> {
  const handle = await openConfined(root, real, display, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    return await readdir(PROC_FD ? `/proc/self/fd/${handle.fd}` : real, { withFileTypes: true });
  } finally {
    await handle.close();
  }
}

/** The bytes of the file `real`, read through its verified descriptor. */
export async function readFileConfined(root: string, real: string, display: string): Promise<Buffer> {
  const handle = await openConfined(root, real, display);
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
