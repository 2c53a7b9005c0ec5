/**
 * A config with a syntax error: INVALID_CONFIG names `file:line:col` once, with a 1-based column in
 * characters, as an editor counts it. Before, tsx's message came through whole — `Transform failed
 * with 1 error:\n<file>:3:20: ERROR: …`, esbuild's 0-based column, one short of the `at <file>:3:21`
 * under it — and a non-ASCII character before the error moved the column (and the caret) by its
 * extra UTF-8 bytes (`"é€"`: 3:25 for 3:22).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, projectRoot, tempDir } from './support.ts';

const project = tempDir('config-syntax-column');
afterAll(() => project.cleanup());
const home = join(project.dir, 'home');
const demo = join(projectRoot, 'cookbook/demo-workspace');
mkdirSync(project.dir, { recursive: true });
writeFileSync(join(project.dir, 'package.json'), '{ "type": "module" }\n');

/** A config file whose line 3 is `line` (a `}` where `]` belongs). */
function configWith(name: string, line: string): string {
  const path = join(project.dir, name);
  writeFileSync(path, `export default {\n  plugins: [\n${line}\n  ],\n};\n`);
  return path;
}

const lines = (text: string) => text.trimEnd().split('\n');

describe('a config syntax error: file:line:col, 1-based, once', { timeout: 120_000 }, () => {
  it('a TypeScript config (tsx cannot compile it): the message, the location and the caret', async () => {
    const line = '    { module: "x" } }';
    const config = configWith('harness.config.ts', line);
    const column = line.lastIndexOf('}') + 1; // 21: the second `}`
    expect(column).toBe(21);
    const [result, listing] = await Promise.all([harness(['run', 'Hello', '--config', config, '--cwd', demo], { home }), harness(['sessions', '--config', config], { home })]);
    expect(result.code).toBe(1);
    expect(lines(result.stderr).slice(0, 4)).toEqual([
      `error INVALID_CONFIG: Could not load config ${config}: Expected "]" but found "}"`,
      `  at ${config}:3:${column}`,
      `  │ ${line}`,
      `  │ ${' '.repeat(column - 1)}^`,
    ]);
    expect(result.stderr).not.toContain(`${config}:3:${column - 1}`);
    // A reading command's warning names it once, the same.
    expect(listing.code).toBe(0);
    expect(listing.stderr).toBe(`warning INVALID_CONFIG: Could not load config ${config}: Expected "]" but found "}" (at ${config}:3:${column}) — reading without the config's plugins\n`);
  });

  it('a non-ASCII character before the error counts as one column (a .ts config and an .mjs one)', async () => {
    const line = '    { module: "é€" } }';
    const column = line.lastIndexOf('}') + 1; // 22
    const ts = configWith('accents.config.ts', line);
    const mjs = configWith('accents.config.mjs', line);
    const results = await Promise.all([ts, mjs].map((config) => harness(['run', 'Hello', '--config', config, '--cwd', demo], { home })));
    for (const [index, config] of [ts, mjs].entries()) {
      const result = results[index]!;
      expect(result.code).toBe(1);
      expect(lines(result.stderr).slice(1, 4)).toEqual([`  at ${config}:3:${column}`, `  │ ${line}`, `  │ ${' '.repeat(column - 1)}^`]);
    }
  });

  it("a plugin module with a syntax error: PLUGIN_IMPORT_FAILED's message has no 0-based column", async () => {
    const plugin = join(project.dir, 'broken-plugin.ts');
    writeFileSync(plugin, "export default {\n  name: 'broken',\n  setup() { return [ } },\n};\n");
    const config = join(project.dir, 'plugin.config.ts');
    writeFileSync(config, `export default { plugins: [{ module: ${JSON.stringify(plugin)} }] };\n`);
    const result = await harness(['run', 'Hello', '--config', config, '--cwd', demo], { home });
    expect(result.code).toBe(1);
    const column = '  setup() { return [ '.length + 1; // the `}` where `]` belongs
    expect(lines(result.stderr).slice(0, 2)).toEqual([`error PLUGIN_IMPORT_FAILED: Could not import plugin module ${plugin}: Unexpected "}"`, `  at ${plugin}:3:${column}`]);
  });
  it("a tab-indented line: the caret keeps the line's tabs, so it lands under the character at any tab width", async () => {
    const line = '\t\t{ module: "x" } }';
    const column = line.lastIndexOf('}') + 1; // 19: the second `}`
    const config = configWith('tabs.config.ts', line);
    const result = await harness(['run', 'Hello', '--config', config, '--cwd', demo], { home });
    expect(result.code).toBe(1);
    expect(lines(result.stderr).slice(1, 4)).toEqual([`  at ${config}:3:${column}`, `  │ ${line}`, `  │ \t\t${' '.repeat(column - 3)}^`]);
  });
});
