/**
 * Every worktree links node_modules to the main checkout's (a symlink, not a folder): `.gitignore`
 * must ignore that link too, or `git add -A` commits it — and a merge of that commit into the main
 * checkout replaces its node_modules folder with the link, deleting the installed packages.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

/** Whether git ignores `path` taken as a file or a link (`--no-index`: tracked or not). */
function ignored(path: string): boolean {
  return spawnSync('git', ['check-ignore', '-q', '--no-index', path], { cwd: root }).status === 0;
}

describe('.gitignore', () => {
  it('ignores node_modules as a symlink, not only as a folder', () => {
    expect(ignored('node_modules')).toBe(true);
    expect(ignored('bench/node_modules')).toBe(true);
    expect(ignored('viewer/node_modules')).toBe(true);
  });
});
