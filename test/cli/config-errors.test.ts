/**
 * A config with a misspelt key, as the CLI reports it: `INVALID_CONFIG` naming the key's path,
 * "did you mean" the key meant, and where the key is written (`harness.config.ts:4:3`, with the line
 * under it) — at the top level, in a plugin's entry, in a plugin's own config (a TypeScript or a
 * JSON config), and in an option of `defaultPlugins()`. Commands that only read journals warn with the same location and go on.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, journalOf, pluginModule, projectRoot, tempDir } from './support.ts';

const project = tempDir('config-errors');
afterAll(() => project.cleanup());
const home = join(project.dir, 'home');
const demo = join(projectRoot, 'cookbook/demo-workspace');
const scripted = JSON.stringify(pluginModule('llm-scripted'));

/** A project folder (an ES module package) with `harness.config.ts` holding `text`. */
function projectWith(name: string, text: string): { dir: string; config: string } {
  const dir = join(project.dir, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(join(dir, 'harness.config.ts'), text);
  return { dir, config: join(dir, 'harness.config.ts') };
}

const lines = (text: string) => text.trimEnd().split('\n');

describe('config errors: the key path, "did you mean" and file:line:col', { timeout: 120_000 }, () => {
  it('a misspelt top-level key (harness.config.ts of the working directory)', async () => {
    const { dir, config } = projectWith(
      'top-level',
      `// The project's config.\nexport default {\n  defaults: { provider: 'scripted', model: 'scripted-default' },\n  plugns: [{ module: ${scripted} }],\n};\n`,
    );
    const result = await harness(['run', 'Hello', '--cwd', demo], { home, cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(lines(result.stderr)).toEqual([
      `error INVALID_CONFIG: ${config} is not a valid harness config:`,
      `  - plugns: unknown key; did you mean \`plugins\`? (${config}:4:3)`,
      '  - plugins: Invalid input: expected array, received undefined',
      expect.stringMatching(/^A config is defineConfig\(\{ /),
      `  │   plugns: [{ module: ${scripted} }],`,
      '  │   ^',
      `hint: the config is ${config} (the working directory's harness.config.ts); --config <path> or $HARNESS_CONFIG picks another.`,
    ]);
  });

  it("a misspelt key in a plugin's entry and in the plugin's own config", async () => {
    const entry = projectWith('entry', `export default {\n  plugins: [\n    { module: ${scripted}, cofig: { paceMs: 0 } },\n  ],\n};\n`);
    const option = projectWith('option', `export default {\n  plugins: [\n    {\n      module: ${scripted},\n      config: { paceMS: 0 },\n    },\n  ],\n};\n`);
    const [badEntry, badOption, listing] = await Promise.all([
      harness(['run', 'Hello', '--config', entry.config, '--cwd', demo], { home }),
      harness(['run', 'Hello', '--config', option.config, '--cwd', demo], { home }),
      harness(['sessions', '--config', option.config], { home }),
    ]);
    const column = `    { module: ${scripted}, `.length + 1;
    expect(badEntry.code).toBe(1);
    expect(lines(badEntry.stderr).slice(0, 2)).toEqual([
      `error INVALID_CONFIG: ${entry.config} is not a valid harness config:`,
      `  - plugins.0.cofig: unknown key; did you mean \`config\`? (${entry.config}:3:${column})`,
    ]);
    // The line names the location; the line of the config under it does not repeat it.
    expect(lines(badEntry.stderr).slice(3, 5)).toEqual([`  │     { module: ${scripted}, cofig: { paceMs: 0 } },`, `  │ ${' '.repeat(column - 1)}^`]);
    expect(badEntry.stderr.split(`${entry.config}:3:${column}`)).toHaveLength(2);
    expect(badOption.code).toBe(1);
    expect(lines(badOption.stderr)).toEqual([
      'error INVALID_CONFIG: Plugin "llm-scripted" has an invalid config:',
      `  - paceMS: unknown key; did you mean \`paceMs\`? (${option.config}:5:17)`,
      `Fix these fields in this plugin's entry of ${option.config}.`,
      '  │       config: { paceMS: 0 },',
      '  │                 ^',
      `hint: the config is ${option.config} (from --config); --config <path> or $HARNESS_CONFIG picks another.`,
    ]);
    // A reading command's warning names the location once too.
    expect(listing.code).toBe(0);
    expect(listing.stderr).toMatch(/^warning INVALID_CONFIG: .*did you mean `paceMs`\?/);
    expect(listing.stderr.split(`${option.config}:5:17`)).toHaveLength(2);
  });

  it('a JSON config (--config harness.config.json) is located the same way, and so is its syntax error', async () => {
    const dir = join(project.dir, 'json');
    mkdirSync(dir, { recursive: true });
    const config = join(dir, 'harness.config.json');
    const entry = `    { "module": ${scripted}, "config": { "paceMS": 0 } }`;
    writeFileSync(config, `{\n  "defaults": { "provider": "scripted", "model": "scripted-default" },\n  "plugins": [\n${entry}\n  ]\n}\n`);
    const result = await harness(['run', 'Hello', '--config', config, '--cwd', demo], { home });
    const column = entry.indexOf('"paceMS"') + 1;
    expect(result.code).toBe(1);
    expect(lines(result.stderr).slice(0, 4)).toEqual([
      'error INVALID_CONFIG: Plugin "llm-scripted" has an invalid config:',
      `  - paceMS: unknown key; did you mean \`paceMs\`? (${config}:4:${column})`,
      `Fix these fields in this plugin's entry of ${config}.`,
      `  │ ${entry}`,
    ]);
    // A JSON syntax error: its 1-based column and the line (esbuild reports a 0-based one).
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{\n  "plugins": [\n    { "module": "x" },,\n  ]\n}\n');
    const syntax = await harness(['run', 'Hello', '--config', broken, '--cwd', demo], { home });
    expect(syntax.code).toBe(1);
    expect(lines(syntax.stderr)).toContain(`  at ${broken}:3:23`);
    expect(lines(syntax.stderr)).toContain('  │                       ^');
  });

  it('a misspelt option of defaultPlugins(), and a reading command warns with the location and goes on', async () => {
    const stack = JSON.stringify(join(projectRoot, 'stack/index.ts'));
    const { config } = projectWith('stack', `import { defaultPlugins } from ${stack};\n\nexport default {\n  plugins: defaultPlugins({\n    aprovals: { default: 'allow-all' },\n  }),\n};\n`);
    const good = projectWith('good', `export default {\n  defaults: { provider: 'scripted', model: 'scripted-default' },\n  plugins: [{ module: ${scripted} }],\n};\n`);
    const first = await harness(['run', 'Hello', '--config', good.config, '--cwd', demo], { home });
    expect(first.code).toBe(0);
    const [run, replay] = await Promise.all([harness(['run', 'Hello', '--config', config, '--cwd', demo], { home }), harness(['replay', journalOf(first.stdout), '--config', config], { home })]);
    expect(run.code).toBe(1);
    expect(lines(run.stderr).slice(0, 4)).toEqual([
      expect.stringMatching(/^error INVALID_CONFIG: Could not load config \S+: defaultPlugins\(\) has no option "aprovals" \(did you mean `approvals`\?\)\. /),
      `  at ${config}:5:5`,
      "  │     aprovals: { default: 'allow-all' },",
      '  │     ^',
    ]);
    expect(replay.code).toBe(0);
    expect(replay.stderr).toMatch(/^warning INVALID_CONFIG: .*did you mean `approvals`\?.* \(at \S+:5:5\) — reading without the config's plugins\n/);
  });
});
