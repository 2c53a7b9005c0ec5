/**
 * scripts/dist-imports.mjs, the check the build and `npm run check:package` run on dist/: a relative
 * import of the built JavaScript that keeps `.ts` (tsc left `import('./store.ts')` in
 * journal-postgres, and the installed package failed with ERR_MODULE_NOT_FOUND) or names no built
 * file is refused, naming the file and the specifier; text in strings and comments is not an import.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const script = join(dirname(fileURLToPath(import.meta.url)), '../../scripts/dist-imports.mjs');
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A package folder whose dist/ holds `files`; runs the check on it. */
function check(files: Record<string, string>): { status: number | null; stderr: string } {
  const root = mkdtempSync(join(tmpdir(), 'harness-dist-imports-'));
  made.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, 'dist', path)), { recursive: true });
    writeFileSync(join(root, 'dist', path), text);
  }
  const code = `import { checkDistImports } from ${JSON.stringify(script)}; checkDistImports(${JSON.stringify(join(root, 'dist'))});`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
  return { status: result.status, stderr: result.stderr };
}

const good = {
  'plugin/store.js': 'export const open = () => 1;\n',
  'plugin/schema.js': 'export const version = 1;\n',
  'main.js': "import { open } from './plugin/store.js';\nexport * from './plugin/schema.js';\nexport const later = () => import('./plugin/store.js');\n",
};

describe('scripts/dist-imports.mjs', () => {
  it('passes a dist whose relative imports all name built .js files, and ignores import-like text in strings and comments', () => {
    const result = check({
      ...good,
      'scaffold.js': "// import x from './nowhere.ts';\nexport const text = `import wordCount from '../plugins/word-count.ts';`;\nexport const s = \"import('./y.ts')\";\nimport 'node:fs';\n",
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it("refuses a dynamic import('./store.ts') left by tsc, a static .ts import and an import of a file that is not built", () => {
    const result = check({
      ...good,
      'plugin/index.js': "export default { setup() { const f = async () => (await import('./store.ts')).open(); return f; } };\n",
      'other.js': "import { version } from './plugin/schema.ts';\nimport { gone } from './plugin/gone.js';\nexport { version, gone };\n",
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('dist/ has 3 relative import(s)');
    expect(result.stderr).toContain(`${join('dist', 'plugin/index.js')}: './store.ts' does not end in .js`);
    expect(result.stderr).toContain(`${join('dist', 'other.js')}: './plugin/schema.ts' does not end in .js`);
    expect(result.stderr).toContain(`${join('dist', 'other.js')}: './plugin/gone.js' names no file in dist/`);
  });
});
