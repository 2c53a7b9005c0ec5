/**
 * `harness export S -o <file>` into a folder that is not there: the error named the temporary file
 * (`error ENOENT: ENOENT: … open '/nonexistdir/x.jsonl.partial-7327'`), the code twice, and no fix.
 * Now it names the target and its missing folder, and how to fix it; nothing is left behind. And
 * any file-system error is printed with its code once.
 */
import { Writable } from 'node:stream';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pc from 'picocolors';
import { afterAll, describe, expect, it } from 'vitest';
import { reportError } from '../../cli/main.ts';
import { harness, tempDir } from './support.ts';

const project = tempDir('export-output');
afterAll(() => project.cleanup());

describe('export -o into a folder that cannot hold it', { timeout: 120_000 }, () => {
  it('names the target and the missing folder, with the fix (before: ENOENT twice and the .partial-<pid> name)', async () => {
    const home = join(project.dir, 'home');
    const ran = await harness(['run', 'Hello there.', '--cwd', project.dir, '--approve', 'deny-all'], { home });
    expect(ran.code, ran.stderr).toBe(0);
    const id = /sessions\/([0-9a-f-]{36})\.jsonl/.exec(ran.stdout)![1]!;

    const target = join(project.dir, 'nonexistdir', 'x.jsonl');
    const missing = await harness(['export', id, '-o', target], { home });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`error OUTPUT_FOLDER_NOT_FOUND: Cannot write ${target}: the folder ${join(project.dir, 'nonexistdir')} does not exist; create it (mkdir -p`);
    expect(missing.stderr).not.toContain('partial');
    expect(missing.stderr).not.toMatch(/ENOENT/);

    // A file where a folder should be.
    const file = join(project.dir, 'a-file');
    writeFileSync(file, 'x');
    const notFolder = await harness(['export', id, '-o', join(file, 'x.jsonl')], { home });
    expect(notFolder.code).toBe(1);
    expect(notFolder.stderr).toContain('error OUTPUT_FOLDER_NOT_FOUND');
    expect(notFolder.stderr).toContain('is a file, not a folder');
    expect(notFolder.stderr).not.toContain('partial');

    // Into a folder that is there: written, and no temporary file left.
    const good = join(project.dir, 'out.jsonl');
    const exported = await harness(['export', id, '-o', good], { home });
    expect(exported.code, exported.stderr).toBe(0);
    expect(existsSync(good)).toBe(true);
    expect(readdirSync(project.dir).filter((name) => name.includes('partial'))).toEqual([]);
  });
});

describe('a file-system error', () => {
  it('is printed with its code once (before: error ENOENT: ENOENT: …)', async () => {
    let text = '';
    const err = new Writable({
      write(chunk, _encoding, done) {
        text += String(chunk);
        done();
      },
    }) as unknown as NodeJS.WriteStream;
    const error = Object.assign(new Error("ENOENT: no such file or directory, open '/x'"), { code: 'ENOENT' });
    expect(await reportError(error, { out: err, err, c: pc.createColors(false), interactive: false }, {})).toBe(1);
    expect(text).toBe("error ENOENT: no such file or directory, open '/x'\n");
  });
});
