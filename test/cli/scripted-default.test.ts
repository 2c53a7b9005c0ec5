/**
 * The built-in scripted model's answer counts in words a person would write: a workspace of one
 * file of one line is "1 entry" and "1 line", not "1 entries" / "1 lines" (the fresh-user trial).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, tempDir } from './support.ts';

const project = tempDir('scripted-default');
afterAll(() => project.cleanup());

describe('scripted-default', { timeout: 120_000 }, () => {
  it('says "1 entry" and "1 line" for a workspace of one one-line file, plurals otherwise', async () => {
    const one = join(project.dir, 'one');
    mkdirSync(one);
    writeFileSync(join(one, 'a.txt'), 'hello\n');
    const single = await harness(['run', 'What is in this workspace?', '--cwd', one], { home: join(project.dir, 'home'), env: { NO_COLOR: '1' } });
    expect(single.code, single.stderr).toBe(0);
    expect(single.stdout).toContain('The workspace has 1 entry: a.txt.');
    expect(single.stdout).toContain('a.txt has 1 line and begins with:');

    const two = join(project.dir, 'two');
    mkdirSync(two);
    writeFileSync(join(two, 'a.txt'), 'hello\nworld\n');
    writeFileSync(join(two, 'b.txt'), 'more\n');
    const several = await harness(['run', 'What is in this workspace?', '--cwd', two], { home: join(project.dir, 'home'), env: { NO_COLOR: '1' } });
    expect(several.code, several.stderr).toBe(0);
    expect(several.stdout).toContain('The workspace has 2 entries: a.txt, b.txt.');
    expect(several.stdout).toMatch(/\.txt has \d lines and begins with:/);
  });
});
