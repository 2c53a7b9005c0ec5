/**
 * read_file, write_file and edit_file on real temp workspaces, run through the central close-out.
 */
import { chmodSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HarnessError, type Harness } from '../../runtime/index.ts';
import { writeAtomic } from '../../plugins/tools-workspace/files.ts';
import { call, loadTools, tempDir, text, type TempDir } from './support.ts';

let harness: Harness;
let ws: TempDir;
beforeAll(async () => {
  harness = await loadTools({ read: { defaultLimit: 5, maxLineChars: 20 } });
});
afterAll(() => harness.dispose());
beforeEach(() => {
  ws = tempDir('files');
});
afterEach(() => ws.cleanup());

const run = (name: string, args: unknown) => call(harness, name, args, { cwd: ws.dir });
const lines = (count: number) => `${Array.from({ length: count }, (_, i) => `line ${i + 1}`).join('\n')}\n`;

describe('read_file', () => {
  it('returns numbered lines and an end-of-file footer', async () => {
    ws.write('a.txt', 'alpha\nbeta\ngamma\n');
    const outcome = await run('read_file', { path: 'a.txt' });
    expect(outcome.isError).toBe(false);
    expect(text(outcome)).toBe('1\talpha\n2\tbeta\n3\tgamma\n[lines 1-3 of 3; end of file]');
  });

  it('reads a window with offset and limit, and says how to read on', async () => {
    ws.write('many.txt', lines(12));
    expect(text(await run('read_file', { path: 'many.txt', offset: 9, limit: 2 }))).toBe(' 9\tline 9\n10\tline 10\n[lines 9-10 of 12; to read more, call read_file with offset=11]');
    // the default window is the configured defaultLimit (5)
    expect(text(await run('read_file', { path: 'many.txt' }))).toBe('1\tline 1\n2\tline 2\n3\tline 3\n4\tline 4\n5\tline 5\n[lines 1-5 of 12; to read more, call read_file with offset=6]');
    expect(text(await run('read_file', { path: 'many.txt', offset: 11, limit: 50 }))).toBe('11\tline 11\n12\tline 12\n[lines 11-12 of 12; end of file]');
  });

  it('counts a last line without a newline, strips CR, and cuts over-long lines', async () => {
    ws.write('crlf.txt', `one\r\ntwo\r\n${'x'.repeat(25)}`);
    expect(text(await run('read_file', { path: 'crlf.txt' }))).toBe(
      `1\tone\n2\ttwo\n3\t${'x'.repeat(20)}… [line cut at 20 characters]\n[lines 1-3 of 3; end of file]\n[1 line longer than 20 characters was cut]`,
    );
  });

  it('reports an empty file and an offset past the end', async () => {
    ws.write('empty.txt', '');
    expect(text(await run('read_file', { path: 'empty.txt' }))).toBe('(empty.txt is empty)\n[0 lines]');
    ws.write('three.txt', 'a\nb\nc\n');
    const past = await run('read_file', { path: 'three.txt', offset: 4 });
    expect(past.isError).toBe(true);
    expect(past.code).toBe('OFFSET_OUT_OF_RANGE');
    expect(text(past)).toBe('The tool failed: offset 4 is past the end of three.txt, which has 3 lines.');
  });

  it('refuses binary files: NUL bytes and invalid UTF-8', async () => {
    ws.write('nul.bin', Buffer.from([0x68, 0x69, 0x00, 0x0a]));
    ws.write('latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a])); // "café" in Latin-1
    for (const path of ['nul.bin', 'latin1.txt']) {
      const outcome = await run('read_file', { path });
      expect(outcome.isError).toBe(true);
      expect(outcome.code).toBe('BINARY_FILE');
      expect(text(outcome)).toBe(`The tool failed: ${path} looks like a binary file (it has NUL bytes or is not valid UTF-8); the file tools only handle text.`);
    }
    // multi-byte UTF-8 is text
    ws.write('utf8.txt', 'café ☕\n');
    expect(text(await run('read_file', { path: 'utf8.txt' }))).toBe('1\tcafé ☕\n[lines 1-1 of 1; end of file]');
  });

  it('refuses a NUL byte that appears inside the window, past the sniffed head', async () => {
    ws.write('late.bin', `${'a\n'.repeat(10_000)}b\0c\n`);
    const outcome = await run('read_file', { path: 'late.bin', offset: 10_001 });
    expect(outcome.code).toBe('BINARY_FILE');
  });

  it('names a missing file and a directory', async () => {
    const missing = await run('read_file', { path: 'nope.txt' });
    expect([missing.code, text(missing)]).toEqual(['FILE_NOT_FOUND', 'The tool failed: nope.txt does not exist.']);
    ws.write('dir/x.txt', 'x');
    const dir = await run('read_file', { path: 'dir' });
    expect([dir.code, text(dir)]).toEqual(['NOT_A_FILE', 'The tool failed: dir is a directory, not a file; use list_dir to see what it contains.']);
  });

  it('streams a large file by window: the byte cap stops the window, lines are still counted', async () => {
    const small = await loadTools({ read: { maxBytes: 100, defaultLimit: 1000 } });
    try {
      // 2,000 lines of 10 bytes ("line 0001\n"): 20,000 bytes, more than 3 chunks of the byte cap.
      const body = `${Array.from({ length: 2000 }, (_, i) => `line ${String(i + 1).padStart(4, '0')}`).join('\n')}\n`;
      ws.write('big.txt', body);
      const outcome = await call(small, 'read_file', { path: 'big.txt', offset: 1000 }, { cwd: ws.dir });
      const shown = text(outcome).split('\n');
      // 10 lines of 10 bytes fill the 100-byte window exactly
      expect(shown.slice(0, 10)).toEqual(Array.from({ length: 10 }, (_, i) => `${1000 + i}\tline ${String(1000 + i).padStart(4, '0')}`));
      expect(shown[10]).toBe('[lines 1000-1009 of 2000 (the output size limit was reached); to read more, call read_file with offset=1010]');
      expect(shown).toHaveLength(11);
    } finally {
      await small.dispose();
    }
  });

  it('fits the window into its output cap so the close-out never cuts it', async () => {
    const small = await loadTools({ read: { maxOutputChars: 40 } });
    try {
      ws.write('w.txt', lines(20));
      // each line costs "N\tline N\n": width 4 ("2000" default limit) + 1 + 6 + 1 = 12 chars → 3 lines fit in 40
      expect(text(await call(small, 'read_file', { path: 'w.txt' }, { cwd: ws.dir }))).toBe(
        '1\tline 1\n2\tline 2\n3\tline 3\n[lines 1-3 of 20 (the output size limit was reached); to read more, call read_file with offset=4]',
      );
    } finally {
      await small.dispose();
    }
  });
});

describe('write_file', () => {
  it('creates a file and its parent directories, atomically (no temp file left)', async () => {
    const outcome = await run('write_file', { path: 'deep/er/new.txt', content: 'héllo\n' });
    expect(outcome.isError).toBe(false);
    expect(text(outcome)).toBe('Created deep/er/new.txt (7 bytes).');
    expect(ws.read('deep/er/new.txt')).toBe('héllo\n');
    expect(readdirSync(join(ws.dir, 'deep/er'))).toEqual(['new.txt']);
  });

  it('replaces an existing file, keeps its mode, and leaves no temp file', async () => {
    const path = ws.write('run.sh', '#!/bin/sh\necho old\n');
    chmodSync(path, 0o755);
    const outcome = await run('write_file', { path: 'run.sh', content: '#!/bin/sh\necho new\n' });
    expect(text(outcome)).toBe('Replaced run.sh (19 bytes; it had 19 bytes).');
    expect(ws.read('run.sh')).toBe('#!/bin/sh\necho new\n');
    expect(statSync(path).mode & 0o777).toBe(0o755);
    expect(readdirSync(ws.dir)).toEqual(['run.sh']);
  });

  it('writes an empty file and refuses a directory path', async () => {
    expect(text(await run('write_file', { path: 'empty', content: '' }))).toBe('Created empty (0 bytes).');
    expect(ws.read('empty')).toBe('');
    ws.write('d/x', 'x');
    const outcome = await run('write_file', { path: 'd', content: 'x' });
    expect([outcome.code, text(outcome)]).toEqual(['NOT_A_FILE', 'The tool failed: d is a directory; give a file path.']);
  });

  it('refuses content over the size cap and writes nothing', async () => {
    const small = await loadTools({ write: { maxBytes: 4 } });
    try {
      const outcome = await call(small, 'write_file', { path: 'big.txt', content: '12345' }, { cwd: ws.dir });
      expect([outcome.code, text(outcome)]).toEqual(['CONTENT_TOO_LARGE', 'The tool failed: The content for big.txt is 5 bytes, over the 4-byte limit.']);
      expect(readdirSync(ws.dir)).toEqual([]);
    } finally {
      await small.dispose();
    }
  });

  it('leaves no temp file when the rename fails (writeAtomic onto a non-empty directory)', async () => {
    ws.write('target/inner.txt', 'x');
    const error = await writeAtomic(ws.dir, join(ws.dir, 'target'), 'target', 'new').then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(HarnessError.is(error)).toBe(true);
    expect(['NOT_A_FILE', 'FS_ERROR']).toContain((error as HarnessError).code);
    expect(readdirSync(ws.dir)).toEqual(['target']);
    expect(readdirSync(join(ws.dir, 'target'))).toEqual(['inner.txt']);
  });
});

describe('edit_file', () => {
  it('replaces a unique match and returns the unified diff', async () => {
    ws.write('code.ts', 'const a = 1;\nconst b = 2;\nconst c = 3;\n');
    const outcome = await run('edit_file', { path: 'code.ts', old_string: 'const b = 2;', new_string: 'const b = 20;\nconst bb = 21;' });
    expect(outcome.isError).toBe(false);
    expect(text(outcome)).toBe(
      ['Edited code.ts: replaced 1 occurrence.', '--- a/code.ts', '+++ b/code.ts', '@@ -1,3 +1,4 @@', ' const a = 1;', '-const b = 2;', '+const b = 20;', '+const bb = 21;', ' const c = 3;', ''].join(
        '\n',
      ),
    );
    expect(ws.read('code.ts')).toBe('const a = 1;\nconst b = 20;\nconst bb = 21;\nconst c = 3;\n');
    expect(readdirSync(ws.dir)).toEqual(['code.ts']);
  });

  it('refuses an ambiguous match, saying how many and where, and changes nothing', async () => {
    ws.write('dup.txt', 'x = 1\ny = 2\nx = 1\nx = 1\n');
    const outcome = await run('edit_file', { path: 'dup.txt', old_string: 'x = 1', new_string: 'x = 9' });
    expect(outcome.code).toBe('AMBIGUOUS_MATCH');
    expect(text(outcome)).toBe(
      'The tool failed: old_string occurs 3 times in dup.txt (at lines 1, 3, 4). Include more surrounding lines to make it unique, or set replace_all: true to replace every occurrence.',
    );
    expect(ws.read('dup.txt')).toBe('x = 1\ny = 2\nx = 1\nx = 1\n');
  });

  it('replaces every occurrence with replace_all, taking "$" literally', async () => {
    ws.write('dup.txt', 'x = 1\ny = 2\nx = 1\n');
    const outcome = await run('edit_file', { path: 'dup.txt', old_string: 'x = 1', new_string: "x = $&'$1", replace_all: true });
    expect(text(outcome)).toBe("Edited dup.txt: replaced 2 occurrences.\n--- a/dup.txt\n+++ b/dup.txt\n@@ -1,3 +1,3 @@\n-x = 1\n+x = $&'$1\n y = 2\n-x = 1\n+x = $&'$1\n");
    expect(ws.read('dup.txt')).toBe("x = $&'$1\ny = 2\nx = $&'$1\n");
  });

  it('says when old_string is not found, and when nothing would change', async () => {
    ws.write('a.txt', 'hello\n');
    const missing = await run('edit_file', { path: 'a.txt', old_string: 'Hello', new_string: 'Bye' });
    expect([missing.code, text(missing)]).toEqual([
      'NO_MATCH',
      'The tool failed: old_string was not found in a.txt. It must match the file exactly, whitespace and indentation included; read the file again to copy the exact text.',
    ]);
    const same = await run('edit_file', { path: 'a.txt', old_string: 'hello', new_string: 'hello' });
    expect(same.code).toBe('NO_CHANGE');
    expect(ws.read('a.txt')).toBe('hello\n');
  });

  it('matches LF-written text in a CRLF file and keeps CRLF line ends', async () => {
    ws.write('win.txt', 'one\r\ntwo\r\nthree\r\n');
    const outcome = await run('edit_file', { path: 'win.txt', old_string: 'one\ntwo', new_string: 'one\n2' });
    expect(outcome.isError).toBe(false);
    expect(ws.read('win.txt')).toBe('one\r\n2\r\nthree\r\n');
  });

  it('refuses binary files and missing files', async () => {
    ws.write('b.bin', Buffer.from([1, 0, 2]));
    expect((await run('edit_file', { path: 'b.bin', old_string: 'a', new_string: 'b' })).code).toBe('BINARY_FILE');
    expect((await run('edit_file', { path: 'none.txt', old_string: 'a', new_string: 'b' })).code).toBe('FILE_NOT_FOUND');
  });

  it('keeps the file mode', async () => {
    const path = ws.write('x.sh', 'echo a\n');
    chmodSync(path, 0o700);
    await run('edit_file', { path: 'x.sh', old_string: 'a', new_string: 'b' });
    expect(statSync(path).mode & 0o777).toBe(0o700);
    expect(ws.read('x.sh')).toBe('echo b\n');
  });
});
