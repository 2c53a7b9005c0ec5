/**
 * list_dir and grep on real temp workspaces, through the central close-out.
 */
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Harness } from '../../runtime/index.ts';
import { globMatcher } from '../../plugins/tools-workspace/glob.ts';
import { call, loadTools, tempDir, text, type TempDir } from './support.ts';

let harness: Harness;
let ws: TempDir;
beforeAll(async () => {
  harness = await loadTools({ listDir: { maxEntries: 50 } });
  ws = tempDir('search');
  ws.write('README.md', '# Demo\nTODO: write docs\n');
  ws.write('src/main.ts', 'export function main() {\n  // todo: wire it\n  return helper();\n}\n');
  ws.write('src/lib/helper.ts', 'export function helper() {\n  return 42; // TODO later\n}\n');
  ws.write('src/lib/deep/x/y.txt', 'TODO deep\n');
  ws.write('.git/HEAD', 'ref: TODO\n');
  ws.write('node_modules/pkg/index.js', '// TODO in a dependency\n');
  ws.write('assets/logo.bin', Buffer.from([0x54, 0x4f, 0x44, 0x4f, 0x00, 0x01])); // "TODO" then NUL
  ws.write('.hidden', 'TODO hidden\n');
  symlinkSync('src/main.ts', join(ws.dir, 'main-link.ts'));
});
afterAll(async () => {
  await harness.dispose();
  ws.cleanup();
});

const run = (name: string, args: unknown) => call(harness, name, args, { cwd: ws.dir });

describe('list_dir', () => {
  it('lists the root, sorted, with dir/ and symlink@ markers', async () => {
    const outcome = await run('list_dir', {});
    expect(outcome.isError).toBe(false);
    expect(text(outcome)).toBe(['.git/', '.hidden', 'README.md', 'assets/', 'main-link.ts@ -> src/main.ts', 'node_modules/', 'src/'].join('\n'));
  });

  it('descends to the asked depth, not expanding .git and node_modules', async () => {
    expect(text(await run('list_dir', { depth: 2 }))).toBe(
      ['.git/ (not expanded)', '.hidden', 'README.md', 'assets/', 'assets/logo.bin', 'main-link.ts@ -> src/main.ts', 'node_modules/ (not expanded)', 'src/', 'src/lib/', 'src/main.ts'].join('\n'),
    );
    expect(text(await run('list_dir', { path: 'src', depth: 5 }))).toBe(['src/lib/', 'src/lib/deep/', 'src/lib/deep/x/', 'src/lib/deep/x/y.txt', 'src/lib/helper.ts', 'src/main.ts'].join('\n'));
  });

  it('expands ignored directories when asked', async () => {
    expect(text(await run('list_dir', { path: 'node_modules', depth: 2 }))).toBe('node_modules/pkg/\nnode_modules/pkg/index.js');
    const all = text(await run('list_dir', { depth: 2, include_ignored: true }));
    expect(all.split('\n').slice(0, 3)).toEqual(['.git/', '.git/HEAD', '.hidden']);
    expect(all).toContain('node_modules/pkg/');
  });

  it('caps the entry count with a note', async () => {
    const small = await loadTools({ listDir: { maxEntries: 3 } });
    try {
      expect(text(await call(small, 'list_dir', { depth: 3 }, { cwd: ws.dir }))).toBe(
        '.git/ (not expanded)\n.hidden\nREADME.md\n[listing stopped at 3 entries; list a subdirectory or use a smaller depth]',
      );
    } finally {
      await small.dispose();
    }
  });

  it('rejects a depth over 5 before running, and a file path', async () => {
    const tool = harness.ctx.tools.require('list_dir');
    expect(() => tool.input.parse({ depth: 6 })).toThrow(/depth/);
    const file = await run('list_dir', { path: 'README.md' });
    expect([file.code, text(file)]).toEqual(['NOT_A_DIRECTORY', 'The tool failed: README.md is a file, not a directory; use read_file to read it.']);
    const missing = await run('list_dir', { path: 'nope' });
    expect(missing.code).toBe('DIRECTORY_NOT_FOUND');
  });

  it('says when a directory is empty', async () => {
    const empty = tempDir('empty');
    try {
      expect(text(await call(harness, 'list_dir', {}, { cwd: empty.dir }))).toBe('The workspace root is empty.');
    } finally {
      empty.cleanup();
    }
  });
});

describe('grep', () => {
  it('finds matches as path:line:text, skipping .git, node_modules, binaries and symlinks', async () => {
    const outcome = await run('grep', { pattern: 'TODO' });
    expect(outcome.isError).toBe(false);
    expect(text(outcome)).toBe(['.hidden:1:TODO hidden', 'README.md:2:TODO: write docs', 'src/lib/deep/x/y.txt:1:TODO deep', 'src/lib/helper.ts:2:  return 42; // TODO later'].join('\n'));
  });

  it('matches case-insensitively and with regex syntax', async () => {
    expect(text(await run('grep', { pattern: 'todo:', ignore_case: true }))).toBe('README.md:2:TODO: write docs\nsrc/main.ts:2:  // todo: wire it');
    expect(text(await run('grep', { pattern: '^export function \\w+\\(\\)' }))).toBe('src/lib/helper.ts:1:export function helper() {\nsrc/main.ts:1:export function main() {');
  });

  it('filters by glob and path, and searches a single file', async () => {
    expect(text(await run('grep', { pattern: 'TODO', glob: '*.ts' }))).toBe('src/lib/helper.ts:2:  return 42; // TODO later');
    expect(text(await run('grep', { pattern: 'TODO', path: 'src', glob: 'lib/**/*.txt' }))).toBe('src/lib/deep/x/y.txt:1:TODO deep');
    expect(text(await run('grep', { pattern: 'return', path: 'src/main.ts' }))).toBe('src/main.ts:3:  return helper();');
  });

  it('caps results with a note', async () => {
    expect(text(await run('grep', { pattern: 'TODO', max_results: 2 }))).toBe(
      '.hidden:1:TODO hidden\nREADME.md:2:TODO: write docs\n[stopped after 2 matches; narrow the pattern, path or glob, or raise max_results (up to 1000)]',
    );
  });

  it('answers no match plainly, and an invalid regex as an error', async () => {
    expect(text(await run('grep', { pattern: 'nothing-like-this' }))).toBe('No matches for /nothing-like-this/ in . (5 text files searched).');
    const bad = await run('grep', { pattern: 'a(' });
    expect(bad.code).toBe('INVALID_PATTERN');
    expect(text(bad)).toMatch(/^The tool failed: The pattern is not a valid JavaScript regular expression: /);
    expect((await run('grep', { pattern: 'x', path: 'missing' })).code).toBe('FILE_NOT_FOUND');
  });
});

describe('glob matcher', () => {
  it('matches names, paths, ** segments, classes and alternatives', () => {
    const cases: [string, string, boolean][] = [
      ['*.ts', 'src/a.ts', true],
      ['*.ts', 'src/a.tsx', false],
      ['src/*.ts', 'src/a.ts', true],
      ['src/*.ts', 'src/lib/a.ts', false],
      ['src/**/*.ts', 'src/a.ts', true],
      ['src/**/*.ts', 'src/lib/deep/a.ts', true],
      ['**/test/*.js', 'a/test/x.js', true],
      ['**/test/*.js', 'test/x.js', true],
      ['*.{ts,js}', 'x.js', true],
      ['*.{ts,js}', 'x.md', false],
      ['file[0-9].txt', 'file7.txt', true],
      ['file[!0-9].txt', 'file7.txt', false],
      ['?.md', 'a.md', true],
      ['?.md', 'ab.md', false],
      ['a.b', 'axb', false],
    ];
    for (const [glob, path, expected] of cases) expect([glob, path, globMatcher(glob)(path)]).toEqual([glob, path, expected]);
  });
});
