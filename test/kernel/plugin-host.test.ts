import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Diagnostic, Next } from '../../runtime/kernel/bus.ts';
import { Kernel, type PluginContext } from '../../runtime/kernel/context.ts';
import { getErrorInfo, HarnessError } from '../../runtime/kernel/errors.ts';
import { definePlugin, PluginHost, type PluginInfo } from '../../runtime/kernel/plugin.ts';
import { createHarness, defineConfig, loadConfig, type HarnessConfig } from '../../runtime/harness.ts';
import { collectDiagnostics, declareTestHooks, runtimeIndex, tempDir } from './support.ts';

declare module '../../runtime/kernel/context.ts' {
  interface HarnessServices {
    testCounter?: { readonly count: () => number };
  }
}

let kernel: Kernel;
let host: PluginHost;
beforeEach(() => {
  kernel = new Kernel();
  declareTestHooks(kernel.bus);
  host = new PluginHost(kernel);
});
afterEach(() => host.dispose());

const tmp = tempDir('host');
afterAll(() => tmp.cleanup());

const adder = (name: string, amount = 1) =>
  definePlugin({
    name,
    setup(ctx) {
      ctx.on('test/number', (p: number, next: Next<number, number>) => next(p) + amount);
    },
  });

async function caught(promise: Promise<unknown>): Promise<HarnessError> {
  try {
    await promise;
  } catch (error) {
    if (HarnessError.is(error)) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('plugin config', () => {
  const schema = z.object({
    providers: z.record(z.string(), z.object({ baseURL: z.url(), timeoutMs: z.number().int().positive().default(30_000) })),
    prefix: z.string().default('llm'),
  });
  const configured = (seen: unknown[]) =>
    definePlugin({
      name: 'configured',
      config: schema,
      setup(_ctx, config) {
        seen.push(config);
      },
    });

  it('a bad field is INVALID_CONFIG naming the plugin and the field path; setup never runs', async () => {
    const seen: unknown[] = [];
    const error = await caught(host.load({ plugin: configured(seen), config: { providers: { openai: { baseURL: 'not a url' } } } }));
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toContain('Plugin "configured"');
    expect(error.message).toContain('providers.openai.baseURL');
    expect(error.issues.map((i) => i.path)).toEqual([['providers', 'openai', 'baseURL']]);
    expect(error.failure).toMatchObject({ code: 'INVALID_CONFIG', plugin: 'configured' });
    expect(seen).toEqual([]);
    expect(host.has('configured')).toBe(false);
  });

  it('several bad fields are all listed, with their paths', async () => {
    const error = await caught(host.load({ plugin: configured([]), config: { providers: { a: { baseURL: 'https://ok.example', timeoutMs: -1 } }, prefix: 3 } }));
    expect(error.issues.map((i) => i.path!.join('.')).sort()).toEqual(['prefix', 'providers.a.timeoutMs']);
    expect(error.message).toContain('providers.a.timeoutMs');
    expect(error.message).toMatch(/prefix: /);
  });

  it('a valid config reaches setup parsed (defaults applied)', async () => {
    const seen: unknown[] = [];
    await host.load({ plugin: configured(seen), config: { providers: { openai: { baseURL: 'https://api.example/v1' } } } });
    expect(seen).toEqual([{ providers: { openai: { baseURL: 'https://api.example/v1', timeoutMs: 30_000 } }, prefix: 'llm' }]);
  });
});

describe('plugin host', () => {
  it('emits plugin/loaded with the plugin info', async () => {
    const loaded: PluginInfo[] = [];
    kernel.bus.add('plugin/loaded', (info: PluginInfo) => void loaded.push(info));
    await host.load(adder('one'));
    expect(loaded).toEqual([{ name: 'one', generation: 1 }]);
    expect(host.list()).toEqual([{ name: 'one', generation: 1 }]);
  });

  it('DUPLICATE_PLUGIN when the name is loaded; the first keeps serving alone', async () => {
    await host.load(adder('dup', 1));
    const error = await caught(host.load(adder('dup', 100)));
    expect(error.code).toBe('DUPLICATE_PLUGIN');
    expect(error.message).toContain('"dup"');
    expect(kernel.bus.waterfall('test/number', 0, (p) => p)).toBe(1);
  });

  it('two concurrent loads of one name: exactly one wins', async () => {
    const results = await Promise.allSettled([host.load(adder('race', 1)), host.load(adder('race', 100))]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(kernel.bus.count('test/number')).toBe(1);
  });

  it('UNKNOWN_PLUGIN for reload and unload of a name that is not loaded', async () => {
    await host.load(adder('present'));
    const reload = await caught(host.reload('absent'));
    expect(reload.code).toBe('UNKNOWN_PLUGIN');
    expect(reload.message).toContain('"absent"');
    expect(reload.message).toContain('present');
    expect((await caught(host.unload('absent'))).code).toBe('UNKNOWN_PLUGIN');
  });

  it('unload removes every registration, runs the disposers, and emits plugin/unloaded', async () => {
    const log: string[] = [];
    const unloaded: PluginInfo[] = [];
    kernel.bus.add('plugin/unloaded', (info: PluginInfo) => void unloaded.push(info));
    let signal: AbortSignal | undefined;
    await host.load(
      definePlugin({
        name: 'everything',
        setup(ctx) {
          signal = ctx.signal;
          ctx.on('test/number', (p: number, next: Next<number, number>) => next(p) + 1);
          ctx.on('test/event', () => {});
          ctx.on('test/sink', () => {});
          ctx.provide('testCounter', { count: () => 1 });
          ctx.onDispose(() => log.push('disposed'));
        },
      }),
    );
    expect(kernel.bus.count('test/number') + kernel.bus.count('test/event') + kernel.bus.count('test/sink')).toBe(3);
    expect(kernel.service('testCounter')).toBeDefined();
    await host.unload('everything');
    expect(kernel.bus.count('test/number')).toBe(0);
    expect(kernel.bus.count('test/event')).toBe(0);
    expect(kernel.bus.count('test/sink')).toBe(0);
    expect(kernel.service('testCounter')).toBeUndefined();
    expect(log).toEqual(['disposed']);
    expect(signal!.aborted).toBe(true);
    expect(unloaded).toEqual([{ name: 'everything', generation: 1 }]);
    expect(host.has('everything')).toBe(false);
  });

  it('ctx.provide: visible on every other context while loaded, gone after unload', async () => {
    let consumer: PluginContext | undefined;
    await host.load(definePlugin({ name: 'consumer', setup: (ctx) => void (consumer = ctx) }));
    expect(consumer!.testCounter).toBeUndefined();
    let providerSawOwn: number | undefined;
    await host.load(
      definePlugin({
        name: 'provider',
        setup(ctx) {
          ctx.provide('testCounter', { count: () => 42 });
          providerSawOwn = ctx.testCounter?.count(); // staged: not visible yet, even to itself
        },
      }),
    );
    expect(providerSawOwn).toBeUndefined();
    expect(consumer!.testCounter!.count()).toBe(42);
    let later: PluginContext | undefined;
    await host.load(definePlugin({ name: 'later', setup: (ctx) => void (later = ctx) }));
    expect(later!.testCounter!.count()).toBe(42);
    await host.unload('provider');
    expect(consumer!.testCounter).toBeUndefined();
    expect(later!.testCounter).toBeUndefined();
  });

  it('DUPLICATE_SERVICE when another plugin provides the same service; the first keeps it', async () => {
    await host.load(definePlugin({ name: 'p1', setup: (ctx) => void ctx.provide('testCounter', { count: () => 1 }) }));
    const error = await caught(host.load(definePlugin({ name: 'p2', setup: (ctx) => void ctx.provide('testCounter', { count: () => 2 }) })));
    expect(getErrorInfo(error).codes).toEqual(['PLUGIN_SETUP_FAILED', 'DUPLICATE_SERVICE']);
    expect((error.cause as HarnessError).message).toContain('"p1"');
    expect((error.cause as HarnessError).message).toContain('"p2"');
    expect(kernel.service<{ count(): number }>('testCounter')!.count()).toBe(1);
    expect(host.has('p2')).toBe(false);
  });

  it('DUPLICATE_SERVICE when one plugin provides the same service twice', async () => {
    const error = await caught(
      host.load(
        definePlugin({
          name: 'twice',
          setup(ctx) {
            ctx.provide('testCounter', { count: () => 1 });
            ctx.provide('testCounter', { count: () => 2 });
          },
        }),
      ),
    );
    expect(getErrorInfo(error).codes).toContain('DUPLICATE_SERVICE');
    expect(kernel.service('testCounter')).toBeUndefined();
  });

  it("a reload of the provider keeps the service available, now the new generation's", async () => {
    let generation = 0;
    const provider = definePlugin({
      name: 'reloading-provider',
      setup(ctx) {
        const mine = ++generation;
        ctx.provide('testCounter', { count: () => mine });
      },
    });
    await host.load(provider);
    await host.reload('reloading-provider');
    expect(kernel.service<{ count(): number }>('testCounter')!.count()).toBe(2);
  });

  it('ctx.on for an undeclared hook throws UNKNOWN_HOOK in setup (PLUGIN_SETUP_FAILED wrapping it)', async () => {
    const error = await caught(host.load(definePlugin({ name: 'typo', setup: (ctx) => void ctx.on('test/nope' as never, (() => {}) as never) })));
    expect(getErrorInfo(error).codes).toEqual(['PLUGIN_SETUP_FAILED', 'UNKNOWN_HOOK']);
  });

  it('a listener that is not a function fails its setup at the call, not at commit', async () => {
    let threwAtCall = false;
    const error = await caught(
      host.load(
        definePlugin({
          name: 'not-a-function',
          setup(ctx) {
            try {
              ctx.on('test/number', 42 as never);
            } catch (e) {
              threwAtCall = true;
              throw e;
            }
          },
        }),
      ),
    );
    expect(threwAtCall).toBe(true);
    expect(getErrorInfo(error).codes).toEqual(['PLUGIN_SETUP_FAILED', 'INVALID_LISTENER']);
  });

  it('ctx.report goes to kernel/diagnostic with the plugin as source', async () => {
    const diagnostics = collectDiagnostics(kernel.bus);
    await host.load(definePlugin({ name: 'reporter', setup: (ctx) => ctx.report({ level: 'warning', code: 'SOMETHING_ODD', message: 'odd' }) }));
    expect(diagnostics).toEqual([{ level: 'warning', code: 'SOMETHING_ODD', message: 'odd', source: 'reporter' } satisfies Diagnostic]);
  });

  it('definePlugin refuses a missing name or setup (INVALID_PLUGIN)', () => {
    expect(() => definePlugin({ name: '', setup: () => {} })).toThrow(expect.objectContaining({ code: 'INVALID_PLUGIN' }));
    expect(() => definePlugin({ name: 'x', setup: undefined as never })).toThrow(expect.objectContaining({ code: 'INVALID_PLUGIN' }));
  });

  it('host.dispose unloads every plugin, last loaded first', async () => {
    const order: string[] = [];
    for (const name of ['a', 'b', 'c']) await host.load(definePlugin({ name, setup: (ctx) => void ctx.onDispose(() => order.push(name)) }));
    await host.dispose();
    expect(order).toEqual(['c', 'b', 'a']);
    expect(host.list()).toEqual([]);
  });

  it('host.dispose during a load waits for it and unloads it too', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const loading = host.load(
      definePlugin({
        name: 'slow',
        async setup(ctx) {
          await gate;
          ctx.on('test/number', (p: number, next: Next<number, number>) => next(p) + 1);
        },
      }),
    );
    const disposing = host.dispose();
    release();
    await Promise.allSettled([loading]);
    await disposing;
    expect(host.has('slow')).toBe(false);
    expect(kernel.bus.count('test/number')).toBe(0);
  });
});

describe('createHarness', () => {
  it('loads a harness.config.ts (via tsx) with its plugins in order; dispose unloads them', async () => {
    tmp.write(
      'plugins/first.ts',
      `import { definePlugin } from ${JSON.stringify(runtimeIndex)};
export default definePlugin({
  name: 'first',
  setup(ctx, config: unknown) {
    ctx.declareHook('cfg/order', 'waterfall');
    ctx.on('cfg/order' as never, ((p: string[], next: (p?: string[]) => string[]) => next([...p, 'first:' + JSON.stringify(config)])) as never);
  },
});
`,
    );
    tmp.write(
      'plugins/second.ts',
      `import { definePlugin, z } from ${JSON.stringify(runtimeIndex)};
export default definePlugin({
  name: 'second',
  config: z.object({ label: z.string() }),
  setup(ctx, config) {
    ctx.on('cfg/order' as never, ((p: string[], next: (p?: string[]) => string[]) => next([...p, 'second:' + config.label])) as never);
  },
});
`,
    );
    const configPath = tmp.write(
      'harness.config.ts',
      `import { defineConfig } from ${JSON.stringify(runtimeIndex)};
const label: string = 'typed';
export default defineConfig({
  dataDir: './data',
  plugins: [
    { module: './plugins/first.ts', config: { a: 1 } },
    { module: './plugins/second.ts', config: { label } },
  ],
});
`,
    );
    const harness = await createHarness({ configPath });
    try {
      expect(harness.configPath).toBe(configPath);
      expect(harness.dataDir).toBe(`${tmp.dir}/data`);
      expect(harness.host.list().map((p) => [p.name, p.generation, p.module])).toEqual([
        ['first', 1, `${tmp.dir}/plugins/first.ts`],
        ['second', 1, `${tmp.dir}/plugins/second.ts`],
      ]);
      const result = harness.kernel.bus.waterfall('cfg/order', [] as string[], (p) => p);
      expect(result).toEqual(['first:{"a":1}', 'second:typed']);
    } finally {
      await harness.dispose();
    }
    expect(harness.host.list()).toEqual([]);
    expect(harness.kernel.bus.count('cfg/order')).toBe(0);
  });

  it('the config module shares this runtime (one HarnessError class) and an edited config is re-read', async () => {
    const path = tmp.write(
      'shared.config.ts',
      `import { defineConfig, HarnessError } from ${JSON.stringify(runtimeIndex)};
export default defineConfig({ plugins: [], marker: HarnessError, version: 1 });
`,
    );
    const first = (await loadConfig(path)) as HarnessConfig & { marker?: unknown; version?: number };
    expect(first.marker).toBe(HarnessError);
    expect(first.version).toBe(1);
    tmp.write('shared.config.ts', `export default { plugins: [], version: 2 };\n`);
    const second = (await loadConfig(path)) as HarnessConfig & { version?: number };
    expect(second.version).toBe(2);
  });

  it('a config with a syntax error is INVALID_CONFIG naming the file', async () => {
    const path = tmp.write('broken.config.ts', 'export default { plugins: [ ;\n');
    const error = await caught(loadConfig(path));
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toContain(path);
  });

  it('CONFIG_NOT_FOUND for a missing config file, naming the path', async () => {
    const missing = `${tmp.dir}/nope.config.ts`;
    const error = await caught(createHarness({ configPath: missing }));
    expect(error.code).toBe('CONFIG_NOT_FOUND');
    expect(error.message).toContain(missing);
  });

  it('INVALID_CONFIG for a directory, naming the config file in it when there is one', async () => {
    const dir = join(tmp.dir, 'project');
    mkdirSync(dir);
    const empty = await caught(loadConfig(dir));
    expect(empty.code).toBe('INVALID_CONFIG');
    expect(empty.message).toBe(
      `The config path ${dir} is a directory; pass the config file itself (a module that default-exports defineConfig({ plugins: [...] }), e.g. ${join(dir, 'harness.config.ts')}).`,
    );
    writeFileSync(join(dir, 'harness.config.mjs'), 'export default { plugins: [] };\n');
    const withFile = await caught(loadConfig(dir));
    expect(withFile.message).toBe(`The config path ${dir} is a directory; pass the config file itself: ${join(dir, 'harness.config.mjs')}.`);
    expect(withFile.failure.configPath).toBe(dir);
  });

  it('a plugin failing to load unloads the ones loaded before it and rethrows', async () => {
    const order: string[] = [];
    const ok = definePlugin({ name: 'ok', setup: (ctx) => void ctx.onDispose(() => order.push('ok disposed')) });
    const bad = definePlugin({ name: 'bad', config: z.object({ port: z.number() }), setup: () => {} });
    const error = await caught(createHarness({ config: defineConfig({ plugins: [{ plugin: ok }, { plugin: bad, config: { port: 'x' } }] }) }));
    expect(error.code).toBe('INVALID_CONFIG');
    expect(error.message).toContain('"bad"');
    expect(error.message).toContain('port');
    expect(order).toEqual(['ok disposed']);
  });

  it('a config without a plugins list is INVALID_CONFIG', async () => {
    expect((await caught(createHarness({ config: {} as never }))).code).toBe('INVALID_CONFIG');
  });

  it("the harness ctx registers live at once and sees the plugins' services", async () => {
    const harness = await createHarness({
      config: { plugins: [{ plugin: definePlugin({ name: 'svc', setup: (ctx) => void ctx.provide('testCounter', { count: () => 7 }) }) }] },
    });
    try {
      harness.ctx.declareHook('app/x', 'waterfall');
      harness.ctx.on('app/x' as never, ((p: number, next: (p?: number) => number) => next(p) * 2) as never);
      expect(harness.kernel.bus.waterfall('app/x', 2, (p) => p)).toBe(4);
      expect(harness.ctx.testCounter!.count()).toBe(7);
    } finally {
      await harness.dispose();
    }
    expect(harness.kernel.bus.count('app/x')).toBe(0);
  });
});
