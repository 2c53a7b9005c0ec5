/**
 * `reloadConfig` / `applyConfig` (issue 17 "dev": editing the config reloads what changed): the
 * config file imported again is compared with the running stack plugin by plugin — an entry added
 * loads, one removed unloads, one whose config changed reloads with it (a new generation), an inline
 * definition that changed reloads with the new one, the rest is untouched; a config that does not
 * load changes nothing. `onPluginError` starts a harness without a plugin that fails to load, and
 * applying the config again loads it once fixed. Each change is a `plugin/reload` record in the open
 * session.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { appliedConfig, applyConfig, createHarness, pluginsNotRunning, readJournal, reloadConfig, type Harness, type SessionEvent } from '../../runtime/index.ts';
import { root } from '../agent/support.ts';

const dir = mkdtempSync(join(tmpdir(), 'harness-config-reload-'));
writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

const RUNTIME = JSON.stringify(join(root, 'runtime/index.ts'));
const plugin = (name: string, extra = '') =>
  `import { definePlugin, z } from ${RUNTIME};\nexport default definePlugin({ name: '${name}', config: z.object({ level: z.number().default(1) }), setup(ctx, config) { globalThis.__levels = { ...globalThis.__levels, ['${name}']: config.level }; } });\n${extra}`;
const levels = () => (globalThis as { __levels?: Record<string, number> }).__levels ?? {};

function writeConfig(entries: string, extra = '', keys = ''): string {
  const path = join(dir, 'harness.config.ts');
  writeFileSync(path, `import { definePlugin } from ${RUNTIME};\nexport default { ${keys}plugins: [${entries}] };\n${extra}`);
  return path;
}

async function records(path: string): Promise<SessionEvent<'plugin/reload'>[]> {
  const out: SessionEvent<'plugin/reload'>[] = [];
  for await (const event of readJournal(path)) if (event.type === 'plugin/reload') out.push(event as SessionEvent<'plugin/reload'>);
  return out;
}

describe('reloadConfig', () => {
  it('loads what was added, unloads what was removed, reloads what changed, leaves the rest; a config that does not load changes nothing', async () => {
    for (const name of ['a', 'b', 'c']) writeFileSync(join(dir, `${name}.ts`), plugin(name));
    const inline = (tag: string) => `{ plugin: definePlugin({ name: 'inline', setup() { globalThis.__inline = '${tag}'; } }) }`;
    const configPath = writeConfig(`{ module: './a.ts', config: { level: 1 } }, { module: './b.ts' }, ${inline('one')}`);
    harness = await createHarness({ configPath, dataDir: join(dir, 'data') });
    const session = await harness.createSession({ cwd: dir });

    writeConfig(`{ module: './a.ts', config: { level: 2 } }, { module: './c.ts' }, ${inline('two')}`);
    const result = await reloadConfig(harness);
    expect(result.outcome).toBe('applied');
    expect(result.changes.map((c) => [c.action, c.outcome, c.name, c.generation ?? null, c.configKeys ?? null])).toEqual([
      ['unload', 'ok', 'b', null, null],
      ['reload', 'ok', 'a', 2, ['level']],
      ['load', 'ok', 'c', 1, null],
      ['reload', 'ok', 'inline', 2, null],
    ]);
    expect(harness.host.list().map((p) => [p.name, p.generation])).toEqual([
      ['a', 2],
      ['inline', 2],
      ['c', 1],
    ]);
    expect(levels().a).toBe(2);
    expect((globalThis as { __inline?: string }).__inline).toBe('two');
    expect(result.restartKeys).toEqual([]);

    // The same config again: nothing changes (the inline definition is a new object only when the file is read again).
    expect((await applyConfig(harness, appliedConfig(harness))).outcome).toBe('unchanged');

    // A syntax error: nothing changes, and the failure is journaled.
    writeConfig(`{ module: './a.ts', config: { level: 3 } }`, 'export const broken = {{;\n');
    const failed = await reloadConfig(harness);
    expect(failed.outcome).toBe('failed');
    expect(failed.error).toMatchObject({ code: 'INVALID_CONFIG' });
    expect(harness.host.list().map((p) => p.name)).toEqual(['a', 'inline', 'c']);
    // A key other than plugins: reported for a restart.
    writeConfig(`{ module: './a.ts', config: { level: 2 } }, { module: './c.ts' }, ${inline('two')}`, '', 'maxSteps: 5, ');
    const restart = await reloadConfig(harness);
    expect(restart.restartKeys).toEqual(['maxSteps']);

    await session.close();
    const journaled = await records(session.path);
    expect(journaled.map((e) => [e.data.action, e.data.outcome, e.data.name ?? null])).toEqual([
      ['unload', 'ok', 'b'],
      ['reload', 'ok', 'a'],
      ['load', 'ok', 'c'],
      ['reload', 'ok', 'inline'],
      ['config', 'failed', null],
      // the restart-keys save re-read the inline definition: a new object, reloaded
      ['reload', 'ok', 'inline'],
    ]);
    expect(journaled[4]!.data).toMatchObject({ configPath, failure: { code: 'INVALID_CONFIG' } });
  });

  it('onPluginError starts without a plugin that fails to load; applying the config again loads it once fixed', async () => {
    writeFileSync(join(dir, 'ok.ts'), plugin('ok'));
    writeFileSync(join(dir, 'broken.ts'), plugin('broken', 'export const broken = {{;\n'));
    const configPath = writeConfig(`{ module: './ok.ts' }, { module: './broken.ts' }`);
    await expect(createHarness({ configPath, dataDir: join(dir, 'data2') })).rejects.toMatchObject({ code: 'PLUGIN_IMPORT_FAILED' });
    const errors: string[] = [];
    harness = await createHarness({ configPath, dataDir: join(dir, 'data2'), onPluginError: (error) => void errors.push((error as { code: string }).code) });
    expect(errors).toEqual(['PLUGIN_IMPORT_FAILED']);
    expect(harness.host.list().map((p) => p.name)).toEqual(['ok']);
    expect(pluginsNotRunning(harness).map((p) => p.label)).toEqual([join(dir, 'broken.ts')]);
    const session = await harness.createSession({ cwd: dir });
    // Still broken: the load fails again, journaled as a failed load.
    expect((await applyConfig(harness, appliedConfig(harness))).changes.map((c) => [c.action, c.outcome])).toEqual([['load', 'failed']]);
    writeFileSync(join(dir, 'broken.ts'), plugin('broken'));
    const fixed = await applyConfig(harness, appliedConfig(harness));
    expect(fixed.changes.map((c) => [c.action, c.outcome, c.name])).toEqual([['load', 'ok', 'broken']]);
    expect(pluginsNotRunning(harness)).toEqual([]);
    await session.close();
    expect((await records(session.path)).map((e) => [e.data.action, e.data.outcome, e.data.name])).toEqual([
      ['load', 'failed', join(dir, 'broken.ts')],
      ['load', 'ok', 'broken'],
    ]);
  });
});
