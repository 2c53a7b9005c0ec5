/**
 * Path confinement: every file tool refuses `../` escapes, absolute paths outside the root and
 * symlinks (to a file, to a directory, dangling) that resolve outside; symlinks that stay inside, and
 * absolute paths inside, are fine. Also: the workspace root is the session cwd at call time, unless
 * the config sets `root`.
 */
import { existsSync, readdirSync, readlinkSync, symlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, getErrorInfo, type Harness } from '../../runtime/index.ts';
import { call, loadTools, pluginModule, tempDir, text, type TempDir } from './support.ts';

let harness: Harness;
// Made at collection time: the test table below names paths in them.
const outside: TempDir = tempDir('outside');
const ws: TempDir = tempDir('confined');
beforeAll(async () => {
  harness = await loadTools();
  outside.write('secret.txt', 'secret stuff\n');
  outside.write('sub/deep.txt', 'secret deep\n');
  ws.write('a.txt', 'inside a\n');
  ws.write('sub/b.txt', 'inside b\n');
  symlinkSync(join(outside.dir, 'secret.txt'), join(ws.dir, 'out-file'));
  symlinkSync(outside.dir, join(ws.dir, 'out-dir'));
  symlinkSync(join(outside.dir, 'not-yet.txt'), join(ws.dir, 'dangling'));
  symlinkSync('a.txt', join(ws.dir, 'in-file'));
  symlinkSync(join(ws.dir, 'sub'), join(ws.dir, 'in-dir'));
});
afterAll(async () => {
  await harness.dispose();
  ws.cleanup();
  outside.cleanup();
});

const FILE_TOOLS = ['read_file', 'write_file', 'edit_file', 'list_dir', 'grep'] as const;
type FileTool = (typeof FILE_TOOLS)[number];

/** Arguments for `tool` aimed at `path`. */
function argsFor(tool: FileTool, path: string): Record<string, unknown> {
  switch (tool) {
    case 'read_file':
      return { path };
    case 'write_file':
      return { path, content: 'pwned\n' };
    case 'edit_file':
      return { path, old_string: 'secret', new_string: 'pwned' };
    case 'list_dir':
      return { path };
    case 'grep':
      return { pattern: 'secret', path };
  }
}

describe('escapes are refused for every file tool', () => {
  const escapes = (tool: FileTool): { label: string; path: string; resolved: string }[] => {
    const outsideName = basename(outside.dir);
    const onDir = tool === 'list_dir' || tool === 'grep';
    return [
      { label: '../ escape', path: onDir ? `../${outsideName}` : `../${outsideName}/secret.txt`, resolved: onDir ? outside.dir : join(outside.dir, 'secret.txt') },
      { label: 'absolute path outside', path: onDir ? outside.dir : join(outside.dir, 'secret.txt'), resolved: onDir ? outside.dir : join(outside.dir, 'secret.txt') },
      { label: 'symlink to a file outside', path: 'out-file', resolved: join(outside.dir, 'secret.txt') },
      { label: 'symlink to a directory outside', path: onDir ? 'out-dir' : 'out-dir/secret.txt', resolved: onDir ? outside.dir : join(outside.dir, 'secret.txt') },
      { label: 'path below a symlinked directory outside', path: onDir ? 'out-dir/sub' : 'out-dir/sub/deep.txt', resolved: onDir ? join(outside.dir, 'sub') : join(outside.dir, 'sub/deep.txt') },
      { label: 'dangling symlink to outside', path: 'dangling', resolved: join(outside.dir, 'not-yet.txt') },
      { label: '.. inside the path', path: 'sub/../../x', resolved: join(ws.dir, '..', 'x') },
    ];
  };

  for (const tool of FILE_TOOLS) {
    for (const { label, path, resolved } of escapes(tool)) {
      it(`${tool}: ${label}`, async () => {
        const outcome = await call(harness, tool, argsFor(tool, path), { cwd: ws.dir });
        expect(outcome.isError).toBe(true);
        expect(outcome.code).toBe('PATH_OUTSIDE_WORKSPACE');
        const absolute = path.startsWith('/') ? path : join(ws.dir, path);
        const via = resolved === absolute ? '' : ` (it resolves to ${resolved})`;
        expect(text(outcome)).toBe(`The tool failed: The path "${path}" is outside the workspace ${ws.dir}${via}. Only paths inside the workspace can be used.`);
      });
    }
  }

  it('left everything outside untouched', () => {
    expect(outside.read('secret.txt')).toBe('secret stuff\n');
    expect(outside.read('sub/deep.txt')).toBe('secret deep\n');
    expect(readdirSync(outside.dir).sort()).toEqual(['secret.txt', 'sub']);
    expect(existsSync(join(outside.dir, 'not-yet.txt'))).toBe(false);
  });

  it('write_file refuses a new path under a symlinked directory outside, creating nothing', async () => {
    const outcome = await call(harness, 'write_file', { path: 'out-dir/new/deeper.txt', content: 'x' }, { cwd: ws.dir });
    expect(outcome.code).toBe('PATH_OUTSIDE_WORKSPACE');
    expect(existsSync(join(outside.dir, 'new'))).toBe(false);
  });
});

describe('paths that stay inside are allowed', () => {
  it('a symlink to a file inside, for every file tool', async () => {
    const run = (tool: FileTool, args: Record<string, unknown>) => call(harness, tool, args, { cwd: ws.dir });
    expect(text(await run('read_file', { path: 'in-file' }))).toBe('1\tinside a\n[lines 1-1 of 1; end of file]');
    expect(text(await run('grep', { pattern: 'inside', path: 'in-file' }))).toBe('a.txt:1:inside a');
    expect(text(await run('edit_file', { path: 'in-file', old_string: 'inside a', new_string: 'inside A' }))).toContain('+inside A');
    expect(text(await run('write_file', { path: 'in-file', content: 'rewritten\n' }))).toBe('Replaced a.txt (10 bytes; it had 9 bytes).');
    // the write went to the target; the link is still a link
    expect(ws.read('a.txt')).toBe('rewritten\n');
    expect(readlinkSync(join(ws.dir, 'in-file'))).toBe('a.txt');
    expect((await run('list_dir', { path: 'in-file' })).code).toBe('NOT_A_DIRECTORY');
  });

  it('a symlink to a directory inside, for every file tool', async () => {
    const run = (tool: FileTool, args: Record<string, unknown>) => call(harness, tool, args, { cwd: ws.dir });
    expect(text(await run('list_dir', { path: 'in-dir' }))).toBe('sub/b.txt');
    expect(text(await run('grep', { pattern: 'inside', path: 'in-dir' }))).toBe('sub/b.txt:1:inside b');
    expect(text(await run('read_file', { path: 'in-dir/b.txt' }))).toBe('1\tinside b\n[lines 1-1 of 1; end of file]');
    expect((await run('edit_file', { path: 'in-dir/b.txt', old_string: 'inside b', new_string: 'inside B' })).isError).toBe(false);
    expect(text(await run('write_file', { path: 'in-dir/c.txt', content: 'c' }))).toBe('Created sub/c.txt (1 byte).');
    expect(ws.read('sub/b.txt')).toBe('inside B\n');
    expect(ws.read('sub/c.txt')).toBe('c');
  });

  it('absolute paths inside the root', async () => {
    expect(text(await call(harness, 'read_file', { path: join(ws.dir, 'sub', 'b.txt') }, { cwd: ws.dir }))).toBe('1\tinside B\n[lines 1-1 of 1; end of file]');
    expect(text(await call(harness, 'list_dir', { path: ws.dir }, { cwd: ws.dir }))).toContain('sub/');
  });
});

describe('the workspace root', () => {
  it('is each call’s session cwd when the config sets no root', async () => {
    const one = tempDir('ws-one');
    const two = tempDir('ws-two');
    try {
      one.write('which.txt', 'one\n');
      two.write('which.txt', 'two\n');
      expect(text(await call(harness, 'read_file', { path: 'which.txt' }, { cwd: one.dir }))).toBe('1\tone\n[lines 1-1 of 1; end of file]');
      expect(text(await call(harness, 'read_file', { path: 'which.txt' }, { cwd: two.dir }))).toBe('1\ttwo\n[lines 1-1 of 1; end of file]');
      // one's files are outside two's workspace
      expect((await call(harness, 'read_file', { path: join(one.dir, 'which.txt') }, { cwd: two.dir })).code).toBe('PATH_OUTSIDE_WORKSPACE');
      expect(text(await call(harness, 'exec_command', { command: 'pwd' }, { cwd: two.dir }))).toBe(`${two.dir}\n\n[exit code: 0]`);
    } finally {
      one.cleanup();
      two.cleanup();
    }
  });

  it('is config.root when set, whatever the cwd', async () => {
    const rooted = await loadTools({ root: ws.dir });
    try {
      expect(text(await call(rooted, 'read_file', { path: 'sub/b.txt' }, { cwd: outside.dir }))).toBe('1\tinside B\n[lines 1-1 of 1; end of file]');
      expect((await call(rooted, 'read_file', { path: join(outside.dir, 'secret.txt') }, { cwd: outside.dir })).code).toBe('PATH_OUTSIDE_WORKSPACE');
      expect(text(await call(rooted, 'exec_command', { command: 'pwd' }, { cwd: outside.dir }))).toBe(`${ws.dir}\n\n[exit code: 0]`);
    } finally {
      await rooted.dispose();
    }
  });

  it('a missing root is a clear error', async () => {
    const outcome = await call(harness, 'list_dir', {}, { cwd: join(ws.dir, 'no-such-dir') });
    expect([outcome.code, text(outcome)]).toEqual(['WORKSPACE_NOT_FOUND', `The tool failed: The workspace root ${join(ws.dir, 'no-such-dir')} does not exist or is not a directory.`]);
  });
});

describe('plugin config', () => {
  it('registers only the enabled tools', async () => {
    const some = await loadTools({ tools: ['read_file', 'grep'] });
    try {
      expect(some.ctx.tools.ids()).toEqual(['read_file', 'grep']);
    } finally {
      await some.dispose();
    }
    expect(harness.ctx.tools.ids()).toEqual(['read_file', 'write_file', 'edit_file', 'list_dir', 'grep', 'exec_command']);
    expect(harness.ctx.tools.definitions.map((tool) => [tool.name, tool.permission])).toEqual([
      ['read_file', 'read'],
      ['write_file', 'write'],
      ['edit_file', 'write'],
      ['list_dir', 'read'],
      ['grep', 'read'],
      ['exec_command', 'write'],
    ]);
  });

  it('refuses a relative root and an unknown tool name with INVALID_CONFIG', async () => {
    for (const config of [{ root: 'relative/dir' }, { tools: ['read_file', 'rm_rf'] }]) {
      const error = await createHarness({ config: { plugins: [{ module: pluginModule, config }] } }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(getErrorInfo(error).code).toBe('INVALID_CONFIG');
    }
  });

  it('gives every tool a described zod input schema', () => {
    for (const spec of harness.ctx.tools.specs()) {
      const properties = (spec.inputSchema as { properties: Record<string, { description?: string }> }).properties;
      for (const [field, schema] of Object.entries(properties)) expect([spec.name, field, typeof schema.description]).toEqual([spec.name, field, 'string']);
    }
  });
});
