/**
 * A user's project as the CLI sees it: plugins named by package specifier resolve from the
 * config's folder (Node's ESM rules, `import`-only exports included), the built-in stack when the
 * folder has no config, and a coded error when no model is named anywhere.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, HarnessError } from '../../runtime/index.ts';
import { harness, journalOf, pluginModule, readEvents, tempDir } from './support.ts';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});
function folder(prefix: string): string {
  const { dir, cleanup } = tempDir(prefix);
  cleanups.push(cleanup);
  return dir;
}

/** A package `name` in `<dir>/node_modules` whose only export condition is `import`, default-exporting a plugin. */
function installPlugin(dir: string, name: string, pluginName: string): void {
  const root = join(dir, 'node_modules', name);
  mkdirSync(join(root, 'lib'), { recursive: true });
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name, type: 'module', exports: { '.': { import: './lib/index.js' } } }));
  writeFileSync(
    join(root, 'lib/index.js'),
    `const plugin = { name: ${JSON.stringify(pluginName)}, setup(ctx) { ctx.report({ level: 'info', code: 'LOADED', message: ${JSON.stringify(pluginName)} }); } };\nObject.defineProperty(plugin, Symbol.for('harness.plugin'), { value: true });\nexport default plugin;\n`,
  );
}

describe('plugin modules named by package specifier', () => {
  it('resolve from the config folder (exports with only an import condition), and next to relative paths', async () => {
    const dir = folder('specifier');
    installPlugin(dir, 'harness-plugin-hello', 'hello');
    mkdirSync(join(dir, 'plugins'));
    // The project's own plugin imports the package too: both resolve to the one installed module.
    writeFileSync(
      join(dir, 'plugins/mine.mjs'),
      `import hello from 'harness-plugin-hello';\nconst plugin = { name: 'mine', setup() {} };\nObject.defineProperty(plugin, Symbol.for('harness.plugin'), { value: true });\nexport default plugin;\nexport const same = hello;\n`,
    );
    const built = await createHarness({ baseDir: dir, dataDir: join(dir, 'data'), config: { plugins: [{ module: 'harness-plugin-hello' }, { module: './plugins/mine.mjs' }] } });
    try {
      expect(built.host.list()).toEqual([
        { name: 'hello', generation: 1, module: join(dir, 'node_modules/harness-plugin-hello/lib/index.js') },
        { name: 'mine', generation: 1, module: join(dir, 'plugins/mine.mjs') },
      ]);
    } finally {
      await built.dispose();
    }
  });

  it('a package that is not installed is PLUGIN_NOT_FOUND, naming the specifier, the folder and the fix', async () => {
    const dir = folder('specifier-missing');
    const error = await createHarness({ baseDir: dir, dataDir: join(dir, 'data'), config: { plugins: [{ module: 'harness-plugin-nowhere' }] } }).catch((e: unknown) => e);
    expect(HarnessError.is(error) && error.code).toBe('PLUGIN_NOT_FOUND');
    expect((error as Error).message).toContain(`"harness-plugin-nowhere" cannot be found from ${dir}`);
    expect((error as Error).message).toContain('npm install');
  });
});

describe('the harness command in a project folder', () => {
  it('without a config in the folder runs the built-in stack (the scripted default model)', async () => {
    const dir = folder('no-config');
    const home = join(dir, 'home');
    const result = await harness(['run', 'What is in this workspace?', '--approve', 'allow-all'], { home, cwd: dir });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const events = readEvents(journalOf(result.stdout));
    expect(events.find((e) => e.type === 'request/header')?.data.header.config).toMatchObject({ provider: 'scripted', model: 'scripted-default' });
  });

  it('a config without defaults and a command without --provider is NO_DEFAULT_MODEL, and writes no journal', async () => {
    const dir = folder('no-defaults');
    writeFileSync(join(dir, 'harness.config.mjs'), `export default { plugins: [{ module: ${JSON.stringify(pluginModule('llm-scripted'))} }] };\n`);
    const result = await harness(['run', 'hi'], { home: join(dir, 'home'), cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`error NO_DEFAULT_MODEL: No model to call: ${join(dir, 'harness.config.mjs')} has no defaults and no --provider was given.`);
    expect(result.stdout).not.toContain('journal');
    const named = await harness(['run', 'hi', '-p', 'scripted', '-m', 'scripted-default'], { home: join(dir, 'home'), cwd: dir });
    expect(named.code).toBe(0);
  });
});

describe('a TypeScript config outside any package.json', () => {
  it('loads (a plain first import of it failed with "Cannot require() ES Module … in a cycle")', async () => {
    const dir = folder('ts-no-package');
    writeFileSync(
      join(dir, 'harness.config.ts'),
      `const scripted = ${JSON.stringify(pluginModule('llm-scripted'))};\nexport default { defaults: { provider: 'scripted', model: 'scripted-default' }, plugins: [{ module: scripted }] };\n`,
    );
    const result = await harness(['run', 'hi'], { home: join(dir, 'home'), cwd: dir });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(readEvents(journalOf(result.stdout)).some((event) => event.type === 'turn/end' && event.data.reason === 'completed')).toBe(true);
  });
});

describe('harness init', () => {
  it('scaffolds package.json (the dependency), a config on the built-in stack, a plugin and its test; refuses to overwrite', async () => {
    const dir = join(folder('init'), 'my-agent');
    const made = await harness(['init', dir], { home: join(dir, '..', 'home') });
    expect(made.code).toBe(0);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: 'my-agent', type: 'module', dependencies: { 'harness-runtime': '^0.2.0' } });
    expect(readFileSync(join(dir, 'harness.config.ts'), 'utf8')).toContain(
      "import { defaultPlugins, DEFAULT_DEFAULTS } from 'harness-runtime/stack'".replace('defaultPlugins, DEFAULT_DEFAULTS', 'DEFAULT_DEFAULTS, defaultPlugins'),
    );
    expect(readFileSync(join(dir, 'test/word-count.test.ts'), 'utf8')).toContain("from 'harness-runtime/testing'");
    const again = await harness(['init', dir], { home: join(dir, '..', 'home') });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('error INIT_TARGET_EXISTS');
  });

  it('a folder it cannot make is INIT_TARGET_INVALID naming the path and the reason (and /proc does not hang it)', async () => {
    const base = folder('init-invalid');
    const file = join(base, 'a-file');
    writeFileSync(file, 'x');
    const underFile = await harness(['init', join(file, 'agent')], { home: join(base, 'home') });
    expect(underFile.code).toBe(1);
    expect(underFile.stderr).toContain('error INIT_TARGET_INVALID');
    expect(underFile.stderr).toContain(`${file} is a file, not a directory`);
    // Node's recursive mkdir retries forever under /proc, deaf to SIGTERM: killed after 20 s, this fails.
    const proc = await harness(['init', '/proc/harness-init-test/agent'], { home: join(base, 'home'), timeoutMs: 20_000 });
    expect(proc.code).toBe(1);
    expect(proc.stderr).toContain('error INIT_TARGET_INVALID');
    expect(proc.stderr).toContain('/proc/harness-init-test');
  });

  it('says cd with the folder as typed, or its absolute path when shorter, never a long relative path', async () => {
    const base = folder('init-cd');
    const cdOf = (stdout: string) => stdout.split('\n').find((line) => line.startsWith('  cd '));
    // An absolute path typed from elsewhere (the tests run in the checkout): that path, not ../../tmp/….
    const absolute = join(base, 'a');
    const typedAbsolute = await harness(['init', absolute], { home: join(base, 'home') });
    expect(typedAbsolute.code, typedAbsolute.stderr).toBe(0);
    expect(cdOf(typedAbsolute.stdout)).toBe(`  cd ${absolute}`);
    // A relative path: as typed.
    const typedRelative = await harness(['init', 'b'], { home: join(base, 'home'), cwd: base });
    expect(cdOf(typedRelative.stdout)).toBe('  cd b');
    // A relative path longer than the absolute one: the absolute one.
    const climbing = `${'../'.repeat(12)}${base.slice(1)}/c`;
    const typedClimbing = await harness(['init', climbing], { home: join(base, 'home'), cwd: join(base, 'b', 'plugins') });
    expect(typedClimbing.code, typedClimbing.stderr).toBe(0);
    expect(cdOf(typedClimbing.stdout)).toBe(`  cd ${join(base, 'c')}`);
    // The working directory itself: no cd.
    const here = join(base, 'd');
    mkdirSync(here);
    const inPlace = await harness(['init'], { home: join(base, 'home'), cwd: here });
    expect(inPlace.code, inPlace.stderr).toBe(0);
    expect(cdOf(inPlace.stdout)).toBeUndefined();
    expect(inPlace.stdout).toContain('Next:\n  npm install');
  });
});
