/**
 * Docstrings, cookbook pages and the README import the package by its published name: a specifier
 * `harness…` in `import(…)` or `from …` is `harness-runtime` or one of its exports (`/stack`,
 * `/testing`, `/plugins/<a shipped plugin>`) — not a name the package once had (the bare "harness").
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
/** Package names of third-party plugins that examples name on purpose. */
const OTHER_PACKAGES = new Set(['harness-plugin-hello']);

function published(specifier: string): boolean {
  if (specifier === 'harness-runtime' || specifier === 'harness-runtime/stack' || specifier === 'harness-runtime/testing') return true;
  const plugin = /^harness-runtime\/plugins\/([a-z0-9-]+)$/.exec(specifier);
  return plugin !== null && existsSync(join(root, 'plugins', plugin[1]!, 'index.ts'));
}

describe('package names in docs and docstrings', () => {
  it('every harness… specifier is harness-runtime or one of its exports', () => {
    const files = execFileSync('git', ['ls-files', '*.ts', '*.mts', '*.mjs', '*.md'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
    const stale: string[] = [];
    for (const file of files) {
      if (!existsSync(join(root, file))) continue;
      const text = readFileSync(join(root, file), 'utf8');
      for (const match of text.matchAll(/(?:import\(\s*|from\s+)['"](harness[^'"]*)['"]/g)) {
        const specifier = match[1]!;
        if (!published(specifier) && !OTHER_PACKAGES.has(specifier)) stale.push(`${file}: ${specifier}`);
      }
    }
    expect(stale).toEqual([]);
  });
});
