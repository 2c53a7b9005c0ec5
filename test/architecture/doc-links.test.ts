/**
 * The docs the package ships read the same on GitHub and in node_modules: the README and every
 * cookbook page are in the tarball (`files`), each relative link of theirs names a file the tarball
 * holds, and a link to the repository's own files (the cookbook's examples, which do not ship) names
 * one that exists. A `cookbook/<page>.md` named in the README's text or in a message of the sources
 * (serve's 404 says `see cookbook/serve.md`) ships too.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isRelativeLink, linkPath, markdownLinks } from '../support/markdown-links.ts';

const root = resolve(import.meta.dirname, '../..');
const repository = 'https://github.com/harness-runtime/harness-runtime/blob/main/';

/** The tarball's file list (`npm pack --dry-run`, without prepack's build: only `files` matters here). */
const shipped = (): Set<string> => {
  const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' })) as { files: { path: string }[] }[];
  return new Set(pack!.files.map((file) => file.path));
};

describe('shipped docs and their links', () => {
  it('the README and every cookbook page ship, and their links resolve in the tarball or name a file of the repository', () => {
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).repository.url).toBe('git+https://github.com/harness-runtime/harness-runtime.git');
    const files = shipped();
    const pages = readdirSync(join(root, 'cookbook')).filter((name) => name.endsWith('.md'));
    expect(pages).toContain('serve.md');
    expect([...files].filter((path) => path.startsWith('cookbook/')).sort()).toEqual(pages.map((name) => `cookbook/${name}`).sort());
    expect(files.has('README.md')).toBe(true);

    const broken: string[] = [];
    for (const doc of [...files].filter((path) => path.endsWith('.md'))) {
      for (const target of markdownLinks(readFileSync(join(root, doc), 'utf8'))) {
        if (isRelativeLink(target)) {
          const path = posix.normalize(posix.join(posix.dirname(doc), linkPath(target)));
          if (!files.has(path)) broken.push(`${doc}: ${target} (not in the package)`);
        } else if (target.startsWith(repository)) {
          if (!existsSync(join(root, linkPath(target.slice(repository.length))))) broken.push(`${doc}: ${target} (no such file in the repository)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('a cookbook page named in the README or in a message of the sources ships', () => {
    const files = shipped();
    const sources = execFileSync('git', ['ls-files', 'README.md', 'runtime', 'plugins', 'cli', 'stack', 'testing'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
    const named = new Set<string>();
    for (const file of sources) {
      if (!existsSync(join(root, file))) continue;
      for (const match of readFileSync(join(root, file), 'utf8').matchAll(/\bcookbook\/[\w-]+\.md\b/g)) named.add(match[0]);
    }
    expect(named).toContain('cookbook/serve.md');
    expect([...named].filter((path) => !files.has(path) || !existsSync(join(root, dirname(path))))).toEqual([]);
  });
});
