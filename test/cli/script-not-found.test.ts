/**
 * A scripted-model script the config names but that is not there
 * (`scripts: { bad: '../nosuch.ts' }`): before, Node's raw `Cannot find module '/…/nosuch.ts'
 * imported from …/llm-scripted/index.ts` inside a PLUGIN_SETUP_FAILED. Now an `INVALID_CONFIG` like
 * any bad field: the key path, the resolved file and what it is relative to, and where the path is
 * written (`file:line:col` with the line under it).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { harness, pluginModule, projectRoot, tempDir } from './support.ts';

const project = tempDir('script-not-found');
afterAll(() => project.cleanup());

describe('a script file that is not there', { timeout: 120_000 }, () => {
  it('is an INVALID_CONFIG naming scripts.<model>, the file and where the path is written', async () => {
    const dir = join(project.dir, 'project');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    const config = join(dir, 'harness.config.ts');
    const entry = `    { module: ${JSON.stringify(pluginModule('llm-scripted'))}, config: { scripts: { bad: '../nosuch.ts' } } },`;
    writeFileSync(config, `export default {\n  defaults: { provider: 'scripted', model: 'scripted-default' },\n  plugins: [\n${entry}\n  ],\n};\n`);
    const result = await harness(['run', 'Hello', '--config', config, '--cwd', join(projectRoot, 'cookbook/demo-workspace')], { home: join(project.dir, 'home') });
    expect(result.code).toBe(1);
    const column = entry.indexOf('bad:') + 1;
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines.slice(0, 5)).toEqual([
      'error INVALID_CONFIG: Plugin "llm-scripted" has an invalid config:',
      `  - scripts.bad: no script file at ${join(project.dir, 'nosuch.ts')} ("../nosuch.ts" is relative to the config's folder, ${dir}); check the path, or remove the model (${config}:4:${column})`,
      `Fix these fields in this plugin's entry of ${config}.`,
      `  │ ${entry}`,
      `  │ ${' '.repeat(column - 1)}^`,
    ]);
    expect(result.stderr).not.toContain('Cannot find module');
  });
});
