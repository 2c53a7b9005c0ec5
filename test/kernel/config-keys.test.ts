/**
 * Unknown config keys are errors with "did you mean" and, when the config file writes the key once,
 * its `file:line:col` — for the harness config itself and for every plugin's config, whether the
 * plugin's schema is a `z.strictObject` or a plain `z.object` (the kernel checks both as strict;
 * `z.looseObject` is the way to accept extra keys).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { checkConfig, closestName } from '../../runtime/kernel/config-check.ts';
import { Kernel } from '../../runtime/kernel/context.ts';
import { HarnessError } from '../../runtime/kernel/errors.ts';
import { findKeys, locateKey } from '../../runtime/kernel/key-location.ts';
import { definePlugin, isPluginDefinition, PluginHost } from '../../runtime/kernel/plugin.ts';
import { createHarness, type HarnessConfig } from '../../runtime/harness.ts';
import { defaultPlugins } from '../../stack/index.ts';
import { repoRoot, tempDir } from './support.ts';

const tmp = tempDir('config-keys');
afterAll(() => tmp.cleanup());

let host: PluginHost;
beforeEach(() => {
  host = new PluginHost(new Kernel());
});
afterEach(() => host.dispose());

async function caught(promise: Promise<unknown>): Promise<HarnessError> {
  try {
    await promise;
  } catch (error) {
    if (HarnessError.is(error)) return error;
    throw error;
  }
  throw new Error('expected a HarnessError');
}

describe('closestName: "did you mean"', () => {
  it('finds the known key one typo away (a swap counts as one), ignoring case; nothing when none is close', () => {
    expect(closestName('plugns', ['dataDir', 'store', 'defaults', 'retry', 'maxSteps', 'plugins'])).toBe('plugins');
    expect(closestName('maxStep', ['dataDir', 'maxSteps', 'plugins'])).toBe('maxSteps');
    expect(closestName('defualts', ['dataDir', 'defaults'])).toBe('defaults');
    expect(closestName('maxDepht', ['maxDepth', 'timeoutMs'])).toBe('maxDepth');
    expect(closestName('paceMS', ['provider', 'paceMs', 'fragmentChars'])).toBe('paceMs');
    expect(closestName('datadir', ['dataDir', 'store'])).toBe('dataDir');
    expect(closestName('surprise', ['api', 'baseURL', 'models', 'headers'])).toBeUndefined();
    expect(closestName('x', ['id', 'y'])).toBe('y');
    expect(closestName('plugins', ['plugins'])).toBeUndefined();
  });
});

describe('plugin configs: unknown keys are INVALID_CONFIG, strict schema or not', () => {
  const plain = z.object({
    maxDepth: z.number().default(1),
    nested: z.object({ timeoutMs: z.number().optional() }).optional(),
    servers: z.array(z.object({ name: z.string(), command: z.string() })).default([]),
    routes: z.record(z.string(), z.object({ baseURL: z.string() })).optional(),
    either: z.union([z.object({ kind: z.literal('a'), path: z.string() }), z.object({ kind: z.literal('b'), url: z.string() })]).optional(),
    extra: z.looseObject({ known: z.string().optional() }).optional(),
  });
  const seen: unknown[] = [];
  const plugin = definePlugin({ name: 'plain', config: plain, setup: (_ctx, config) => void seen.push(config) });

  it('a plain z.object config: each unknown key, however deep, is an UNKNOWN_KEY issue at its path with "did you mean"; setup never runs', async () => {
    const error = await caught(
      host.load({
        plugin,
        config: {
          maxDepht: 2,
          nested: { timeoutMS: 5 },
          servers: [
            { name: 'a', command: 'x' },
            { name: 'b', command: 'y', comand: 'z' },
          ],
          routes: { gw: { baseURL: 'https://x.test', baseUrl: 'https://y.test' } },
          either: { kind: 'b', url: 'https://z.test', urll: 1 },
        },
      }),
    );
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.issues).toEqual([
      { code: 'UNKNOWN_KEY', message: 'unknown key; did you mean `maxDepth`?', path: ['maxDepht'] },
      { code: 'UNKNOWN_KEY', message: 'unknown key; did you mean `timeoutMs`?', path: ['nested', 'timeoutMS'] },
      { code: 'UNKNOWN_KEY', message: 'unknown key; did you mean `command`?', path: ['servers', 1, 'comand'] },
      { code: 'UNKNOWN_KEY', message: 'unknown key; did you mean `baseURL`?', path: ['routes', 'gw', 'baseUrl'] },
      { code: 'UNKNOWN_KEY', message: 'unknown key; did you mean `url`?', path: ['either', 'urll'] },
    ]);
    expect(error.message).toContain('Plugin "plain" has an invalid config:\n  - maxDepht: unknown key; did you mean `maxDepth`?\n  - nested.timeoutMS: unknown key; did you mean `timeoutMs`?');
    expect(seen).toEqual([]);
    expect(host.has('plain')).toBe(false);
  });

  it('z.looseObject keeps accepting keys it does not list; a valid config passes with its defaults', async () => {
    await host.load({ plugin, config: { extra: { known: 'k', anything: true }, servers: [{ name: 'a', command: 'x' }] } });
    expect(seen).toEqual([{ maxDepth: 1, extra: { known: 'k', anything: true }, servers: [{ name: 'a', command: 'x' }] }]);
  });

  it('a strict object names the keys it knows when none is close, and one issue per unknown key', () => {
    const checked = checkConfig(z.strictObject({ api: z.string().optional(), baseURL: z.string().optional() }), { surprise: 1, baseUrl: 'x' });
    expect(checked.status).toBe('failed');
    expect(checked.issues).toEqual([
      { code: 'UNKNOWN_KEY', message: 'unknown key (known here: api, baseURL)', path: ['surprise'] },
      { code: 'UNKNOWN_KEY', message: 'unknown key; did you mean `baseURL`?', path: ['baseUrl'] },
    ]);
  });

  it('every shipped plugin refuses an unknown key in its config', async () => {
    const names = readdirSync(join(repoRoot, 'plugins'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) {
      const module = (await import(join(repoRoot, 'plugins', name, 'index.ts'))) as { default: unknown };
      const definition = module.default;
      if (!isPluginDefinition(definition)) throw new Error(`plugins/${name} exports no plugin`);
      expect(definition.config, `plugins/${name} has a config schema`).toBeDefined();
      const checked = checkConfig(definition.config!, { zzSurelyUnknown: 1 });
      expect(checked.issues, `plugins/${name}`).toContainEqual(expect.objectContaining({ code: 'UNKNOWN_KEY', path: ['zzSurelyUnknown'] }));
    }
  });
});

describe('the harness config: did you mean, and file:line:col when the key is written once', () => {
  const scripted = join(repoRoot, 'plugins/llm-scripted/index.ts');

  it('a misspelt top-level key names its path, the key meant and its line; details carry the line and column', async () => {
    const entry = `  plugins: [{ module: ${JSON.stringify(scripted)}, cofig: {} }],`;
    const path = tmp.write('typo.config.ts', `// the key below is misspelt\nexport default {\n  defaults: { provider: 'scripted', model: 'scripted-default' },\n  plugns: [],\n${entry}\n};\n`);
    const error = await caught(createHarness({ configPath: path }));
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toContain(`\n  - plugns: unknown key; did you mean \`plugins\`? (${path}:4:3)\n`);
    expect(error.message).toContain(`\n  - plugins.0.cofig: unknown key; did you mean \`config\`? (${path}:5:${entry.indexOf('cofig') + 1})\n`);
    expect(error.failure).toMatchObject({ configPath: path, line: 4, column: 3 });
  });

  it("a misspelt key in a plugin's config gets the plugin, the key meant and its line; a key written twice gets no line", async () => {
    const once = tmp.write('plugin-typo.config.ts', `export default {\n  plugins: [\n    {\n      module: ${JSON.stringify(scripted)},\n      config: { "paceMS": 0 },\n    },\n  ],\n};\n`);
    const error = await caught(createHarness({ configPath: once }));
    expect(error.message).toMatch(/^Plugin "llm-scripted" has an invalid config:\n {2}- paceMS: unknown key; did you mean `paceMs`\? \(/);
    expect(error.message).toContain(`(${once}:5:17)`);
    expect(error.failure).toMatchObject({ plugin: 'llm-scripted', configPath: once, line: 5, column: 17 });
    const twice = tmp.write(
      'twice.config.ts',
      `// paceMS: in a comment is no key\nexport default {\n  plugins: [\n    { module: ${JSON.stringify(scripted)}, config: { paceMS: 0, provider: 'one' } },\n    { module: ${JSON.stringify(scripted)}, config: { paceMS: 0, provider: 'two' } },\n  ],\n};\n`,
    );
    const second = await caught(createHarness({ configPath: twice }));
    expect(second.message).toContain('  - paceMS: unknown key; did you mean `paceMs`?\n');
    expect(second.message).not.toContain(`${twice}:`);
    expect(second.failure.line).toBeUndefined();
  });

  it('a config object (no file) gets "did you mean" but no line', async () => {
    const error = await caught(createHarness({ config: { plugins: [], maxStep: 3 } as unknown as HarnessConfig }));
    expect(error.message).toContain('  - maxStep: unknown key; did you mean `maxSteps`?\n');
    expect(error.failure.line).toBeUndefined();
  });

  it("defaultPlugins() refuses an option it does not know, with the one meant; the config's load error says where it is written", async () => {
    expect(() => defaultPlugins({ aprovals: { default: 'allow-all' } } as never)).toThrow(/defaultPlugins\(\) has no option "aprovals" \(did you mean `approvals`\?\)/);
    const path = tmp.write(
      'stack.config.ts',
      `import { defaultPlugins } from ${JSON.stringify(join(repoRoot, 'stack/index.ts'))};\nexport default {\n  plugins: defaultPlugins({\n    aprovals: { default: 'allow-all' },\n  }),\n};\n`,
    );
    const error = await caught(createHarness({ configPath: path }));
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toContain('has no option "aprovals" (did you mean `approvals`?)');
    expect(error.failure).toMatchObject({ configPath: path, line: 4, column: 5 });
  });
});

describe('locating a key in a config source', () => {
  it('finds keys written bare or quoted after { or ,, and skips comments, strings, template literals and regexes', () => {
    const source = [
      '// plugns: a comment',
      '/* plugns: another */',
      "const note = 'plugns: a string';",
      'const t = `plugns: ${"plugns:"} ${`plugns: ${1}`}`;',
      'const r = /plugns: [/]/;',
      'const x = a ? plugns : b;',
      'export default {',
      '  plugns: [],',
      '  "quoted": 1, \'single\' : 2,',
      '};',
    ].join('\n');
    expect(findKeys(source, 'plugns')).toEqual([{ line: 8, column: 3 }]);
    expect(locateKey(source, 'quoted')).toEqual({ line: 9, column: 3 });
    expect(locateKey(source, 'single')).toEqual({ line: 9, column: 16 });
    expect(locateKey(source, 'missing')).toBeUndefined();
    expect(findKeys('{ "a": 1, "b": { "a": 2 } }', 'a')).toHaveLength(2);
    expect(locateKey('{ "a": 1, "b": { "a": 2 } }', 'a')).toBeUndefined();
  });
});
