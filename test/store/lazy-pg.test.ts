/**
 * journal-postgres loads `pg` only when a postgres store is opened: the default stack lists the
 * plugin, so a harness on the file store must not pay for loading the driver. Checked in a fresh
 * child process (pg is CommonJS: an ESM import of it fills require.cache).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../agent/support.ts';

const root = join(import.meta.dirname, '..', '..');

describe('journal-postgres', () => {
  it('does not load pg when the plugin is loaded and a turn runs on the file store', () => {
    const dir = tempDir('harness-lazy-pg-');
    const child = join(dir, 'child.mjs');
    writeFileSync(
      child,
      `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const loaded = () => Object.keys(require.cache).filter((k) => k.includes('/node_modules/pg/')).length;
const { createHarness } = await import(${JSON.stringify(pathToFileURL(join(root, 'runtime/index.ts')).href)});
const { defaultConfig } = await import(${JSON.stringify(pathToFileURL(join(root, 'stack/index.ts')).href)});
const harness = await createHarness({ dataDir: ${JSON.stringify(join(dir, 'data'))}, config: defaultConfig() });
const names = harness.host.list().map((p) => p.name);
const session = await harness.createSession();
const result = await session.prompt('hi');
await harness.dispose();
console.log(JSON.stringify({ names, reason: result.reason, before: loaded() }));
await import(${JSON.stringify(pathToFileURL(join(root, 'plugins/journal-postgres/store.ts')).href)});
console.log(JSON.stringify({ after: loaded() }));
`,
    );
    const run = spawnSync(process.execPath, ['--import', 'tsx', child], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe('');
    const [first, second] = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(first!.names).toContain('journal-postgres');
    expect(first!.reason).toBe('completed');
    expect(first!.before).toBe(0);
    // The probe itself sees pg once the store module is loaded (a check that cannot fail proves nothing).
    expect(second!.after).toBeGreaterThan(0);
  });
});
