/**
 * Startup (issue 22.4): the hot-reload resolve hook — a loader thread Node starts when it is
 * registered — is registered only when a module is imported a second time (a reload), never for the
 * first load of a config or plugin (a cold `harness run`, `harness sessions`, …).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { importGeneration, reloadHooksRegistered } from '../../runtime/kernel/module-loader.ts';

const dir = mkdtempSync(join(import.meta.dirname, '..', '.tmp-reload-hooks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('importGeneration', () => {
  it('imports a module the first time without the resolve hook, and a fresh generation with the hook after', async () => {
    const helper = join(dir, 'helper.mjs');
    const plugin = join(dir, 'plugin.mjs');
    writeFileSync(helper, 'export const made = {};\n');
    writeFileSync(plugin, "import { made } from './helper.mjs';\nexport const state = { made };\n");
    expect(reloadHooksRegistered()).toBe(false);
    const first = await importGeneration(plugin);
    expect(reloadHooksRegistered()).toBe(false);
    const second = await importGeneration(plugin);
    expect(reloadHooksRegistered()).toBe(true);
    expect(second.state).not.toBe(first.state);
    // The hook passes the generation on to the project's own helpers: they run anew too.
    expect((second.state as { made: object }).made).not.toBe((first.state as { made: object }).made);
  });
});
