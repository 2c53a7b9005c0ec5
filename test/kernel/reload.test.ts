import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Next } from '../../runtime/kernel/bus.ts';
import { Kernel } from '../../runtime/kernel/context.ts';
import { HarnessError } from '../../runtime/kernel/errors.ts';
import { definePlugin, PluginHost, type PluginReloadedEvent, type PluginReloadFailedEvent } from '../../runtime/kernel/plugin.ts';
import { declareTestHooks, runtimeIndex, tempDir, tick } from './support.ts';

const tmp = tempDir('reload');
afterAll(() => tmp.cleanup());

let kernel: Kernel;
let host: PluginHost;
let reloaded: PluginReloadedEvent[];
let failed: PluginReloadFailedEvent[];
beforeEach(() => {
  kernel = new Kernel();
  declareTestHooks(kernel.bus);
  host = new PluginHost(kernel);
  reloaded = [];
  failed = [];
  kernel.bus.add('plugin/reloaded', (e: PluginReloadedEvent) => void reloaded.push(e));
  kernel.bus.add('plugin/reload-failed', (e: PluginReloadFailedEvent) => void failed.push(e));
});
afterEach(() => host.dispose());

const RUNTIME = JSON.stringify(runtimeIndex);

/**
 * A plugin module whose three async `test/gen` taps each prepend the generation they belong to,
 * awaiting between steps, plus one observer. `fileGen` is baked into the module text: setup refuses
 * to run if it differs from the generation the host gives it (proving a fresh module was imported).
 */
function generationPlugin(name: string, fileGen: number, options: { setupThrows?: boolean } = {}): string {
  return `// @ts-nocheck
import { definePlugin } from ${RUNTIME};
const FILE_GEN = ${fileGen};
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
export default definePlugin({
  name: ${JSON.stringify(name)},
  async setup(ctx) {
    const gen = ctx.plugin.generation;
    if (gen !== FILE_GEN) throw new Error('module generation ' + FILE_GEN + ' set up as generation ' + gen);
    for (let i = 0; i < 3; i++) {
      ctx.on('test/gen', async (payload, next) => {
        await pause(payload.id % 7);
        const rest = await next(payload);
        await pause((payload.id * 3) % 5);
        return [gen, ...rest];
      });
      await pause(1);
    }
    ctx.on('test/event', () => {});
    ctx.onDispose(() => { globalThis.__reloadDisposed = (globalThis.__reloadDisposed ?? 0) + 1; });
    globalThis.__reloadSetupEnd?.();
    ${options.setupThrows ? "throw new Error('setup of generation ' + gen + ' blew up');" : ''}
  },
});
`;
}

const dispatch = (id: number) => kernel.bus.waterfall('test/gen', { id }, async () => []);
const currentGeneration = () => host.list()[0]?.generation ?? 0;

describe('reload under load', () => {
  it('1,000 concurrent dispatches across 50 reloads: each sees exactly one generation; no leak; plugin/reloaded ×50', async () => {
    (globalThis as { __reloadDisposed?: number }).__reloadDisposed = 0;
    const path = tmp.write('load/plugin.ts', generationPlugin('under-load', 1));
    await host.load({ module: path });
    expect(kernel.bus.count('test/gen')).toBe(3);

    const results: { id: number; startGen: number; endGen: number; seen: number[] }[] = [];
    const tapCounts = new Set<number>();
    const inflight: Promise<void>[] = [];
    let id = 0;
    // Each dispatch of a batch starts a few microtask hops after the previous one, so starts are
    // spread over the reload's own microtask steps too (a swap that awaited would be seen).
    const startBatch = (size: number, offset = 0) => {
      for (let i = 0; i < size; i++) {
        const myId = id++;
        inflight.push(
          (async () => {
            for (let hop = 0; hop < i * 3 + offset; hop++) await null;
            const startGen = currentGeneration();
            const seen = await dispatch(myId);
            results.push({ id: myId, startGen, endGen: currentGeneration(), seen });
          })(),
        );
      }
    };

    for (let generation = 2; generation <= 51; generation++) {
      tmp.write('load/plugin.ts', generationPlugin('under-load', generation));
      startBatch(7); // before the reload starts
      const reloading = host.reload('under-load');
      await tick(1);
      startBatch(7); // while the new generation's setup runs (staged)
      // As setup resolves: these starts interleave with the host's steps up to and past the swap.
      // A probe checks the tap count at every microtask step meanwhile: never 0 (a gap), never 6 (both).
      (globalThis as { __reloadSetupEnd?: () => void }).__reloadSetupEnd = () => {
        startBatch(6, generation % 3);
        void (async () => {
          for (let hop = 0; hop < 60; hop++) {
            tapCounts.add(kernel.bus.count('test/gen'));
            await null;
          }
        })();
      };
      await reloading;
      delete (globalThis as { __reloadSetupEnd?: () => void }).__reloadSetupEnd;
    }
    await Promise.all(inflight);

    expect(id).toBe(1000);
    expect(results).toHaveLength(1000);
    for (const result of results) {
      expect(result.seen).toHaveLength(3); // never none, never a partial chain
      expect(new Set(result.seen).size).toBe(1); // never a mix
      expect(result.seen[0]).toBe(result.startGen); // the generation live when it started
    }
    // The test really exercised the swap: many dispatches were still running when a reload swapped.
    expect(results.filter((r) => r.endGen !== r.startGen).length).toBeGreaterThan(100);
    const served = new Set(results.map((r) => r.seen[0]));
    for (let generation = 1; generation <= 50; generation++) expect(served.has(generation)).toBe(true);

    expect([...tapCounts]).toEqual([3]);
    expect(kernel.bus.count('test/gen')).toBe(3);
    expect(kernel.bus.count('test/event')).toBe(1);
    expect(reloaded.map((e) => e.generation)).toEqual(Array.from({ length: 50 }, (_, i) => i + 2));
    expect(reloaded.every((e) => e.name === 'under-load' && e.module === path && e.swapMs >= 0 && e.reloadMs >= e.swapMs)).toBe(true);
    expect(failed).toEqual([]);
    expect(await dispatch(0)).toEqual([51, 51, 51]);
    await host.dispose();
    expect((globalThis as { __reloadDisposed?: number }).__reloadDisposed).toBe(51);
  });
});

describe('reload keeps the chain order', () => {
  it("a reloaded plugin's taps keep their place among other plugins' taps of the same stage", async () => {
    const tagger = (tag: string) =>
      definePlugin({
        name: tag,
        setup(ctx) {
          ctx.on('test/number', ((p: number, next: Next<number, number>) => (order.push(`${tag}${ctx.plugin.generation}`), next(p))) as never);
          ctx.on('test/event', () => void order.push(`${tag}${ctx.plugin.generation}:event`));
        },
      });
    const order: string[] = [];
    for (const tag of ['a', 'b', 'c']) await host.load(tagger(tag));
    await host.reload('a');
    await host.reload('b');
    kernel.bus.waterfall('test/number', 0, (p) => p);
    kernel.bus.emit('test/event', { n: 0 });
    expect(order).toEqual(['a2', 'b2', 'c1', 'a2:event', 'b2:event', 'c1:event']);
    // Unload and load again: registration order, so now last.
    await host.unload('a');
    await host.load(tagger('a'));
    order.length = 0;
    kernel.bus.waterfall('test/number', 0, (p) => p);
    expect(order).toEqual(['b2', 'c1', 'a1']);
  });
});

describe('failed reloads', () => {
  it('a module with a syntax error: the old generation keeps serving; plugin/reload-failed has PLUGIN_IMPORT_FAILED and the cause', async () => {
    const path = tmp.write('syntax/plugin.ts', generationPlugin('syntax', 1));
    await host.load({ module: path });
    tmp.write('syntax/plugin.ts', `import { definePlugin } from ${RUNTIME};\nexport default definePlugin({ name: 'syntax', setup( {\n`);
    const pending = dispatch(1); // in flight across the failed reload
    const error = await host.reload('syntax').catch((e: unknown) => e);
    expect(HarnessError.is(error) && error.code).toBe('PLUGIN_IMPORT_FAILED');
    expect((error as HarnessError).message).toContain(path);
    expect((error as HarnessError).cause).toBeInstanceOf(Error);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ name: 'syntax', module: path, generation: 1, failure: { code: 'PLUGIN_IMPORT_FAILED' } });
    expect(failed[0]!.error).toBe(error);
    expect(JSON.parse(JSON.stringify(failed[0]!.failure))).toEqual(failed[0]!.failure);
    expect(await pending).toEqual([1, 1, 1]);
    expect(await dispatch(2)).toEqual([1, 1, 1]);
    expect(kernel.bus.count('test/gen')).toBe(3);
    expect(reloaded).toEqual([]);
    expect(host.list()).toEqual([{ name: 'syntax', generation: 1, module: path }]);

    // Fixed: the next reload works and is generation 2.
    tmp.write('syntax/plugin.ts', generationPlugin('syntax', 2));
    await host.reload('syntax');
    expect(await dispatch(3)).toEqual([2, 2, 2]);
    expect(kernel.bus.count('test/gen')).toBe(3);
  });

  it('a setup that throws: the old generation keeps serving throughout; plugin/reload-failed has PLUGIN_SETUP_FAILED and the cause', async () => {
    const path = tmp.write('setup/plugin.ts', generationPlugin('setup-throws', 1));
    await host.load({ module: path });
    tmp.write('setup/plugin.ts', generationPlugin('setup-throws', 2, { setupThrows: true }));
    const during: number[][] = [];
    const reloading = host.reload('setup-throws').catch((e: unknown) => e);
    for (let i = 0; i < 5; i++) {
      during.push(await dispatch(i));
      await tick(1);
    }
    const error = await reloading;
    expect(during).toEqual(Array.from({ length: 5 }, () => [1, 1, 1]));
    expect(HarnessError.is(error) && error.code).toBe('PLUGIN_SETUP_FAILED');
    expect(((error as HarnessError).cause as Error).message).toBe('setup of generation 2 blew up');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ name: 'setup-throws', generation: 1, failure: { code: 'PLUGIN_SETUP_FAILED', plugin: 'setup-throws' } });
    expect(failed[0]!.failure.message).toContain('setup of generation 2 blew up');
    expect(await dispatch(9)).toEqual([1, 1, 1]);
    expect(kernel.bus.count('test/gen')).toBe(3);
    expect(kernel.bus.count('test/event')).toBe(1);
    expect(host.list()[0]!.generation).toBe(1);
  });

  it('a reload with a bad new config: INVALID_CONFIG, old generation keeps serving', async () => {
    const path = tmp.write(
      'config/plugin.ts',
      `// @ts-nocheck
import { definePlugin, z } from ${RUNTIME};
export default definePlugin({
  name: 'configured',
  config: z.object({ add: z.number() }),
  setup(ctx, config) { ctx.on('test/number', (p, next) => next(p) + config.add); },
});
`,
    );
    await host.load({ module: path, config: { add: 1 } });
    const error = await host.reload('configured', { config: { add: 'two' } }).catch((e: unknown) => e);
    expect(HarnessError.is(error) && error.code).toBe('INVALID_CONFIG');
    expect((error as HarnessError).message).toContain('"configured"');
    expect((error as HarnessError).message).toContain('add');
    expect(failed.map((f) => f.failure.code)).toEqual(['INVALID_CONFIG']);
    expect(kernel.bus.waterfall('test/number', 0, (p) => p)).toBe(1);
    await host.reload('configured', { config: { add: 5 } });
    expect(kernel.bus.waterfall('test/number', 0, (p) => p)).toBe(5);
    await host.reload('configured'); // keeps the last config
    expect(kernel.bus.waterfall('test/number', 0, (p) => p)).toBe(5);
  });

  it('a module that now exports another plugin name is refused (PLUGIN_RENAMED); the old one keeps serving', async () => {
    const path = tmp.write('rename/plugin.ts', generationPlugin('original', 1));
    await host.load({ module: path });
    tmp.write('rename/plugin.ts', generationPlugin('renamed', 2));
    await expect(host.reload('original')).rejects.toMatchObject({ code: 'PLUGIN_RENAMED' });
    expect(failed.map((f) => f.failure.code)).toEqual(['PLUGIN_RENAMED']);
    expect(await dispatch(1)).toEqual([1, 1, 1]);
  });

  it('a module without a plugin export is INVALID_PLUGIN at load', async () => {
    const path = tmp.write('none/plugin.ts', 'export const nothing = 1;\n');
    await expect(host.load({ module: path })).rejects.toMatchObject({ code: 'INVALID_PLUGIN' });
  });

  it('a missing module is PLUGIN_IMPORT_FAILED at load', async () => {
    await expect(host.load({ module: `${tmp.dir}/does-not-exist.ts` })).rejects.toMatchObject({
      code: 'PLUGIN_IMPORT_FAILED',
      message: `Could not import plugin module ${tmp.dir}/does-not-exist.ts: no such file; check the module path of this plugin in the config`,
    });
  });
});

describe('reload re-evaluates project-local helpers', () => {
  it('editing a helper and a helper of the helper, then reloading, runs the new code; the runtime stays shared', async () => {
    const write = (helper: string, deep: string) => {
      tmp.write('helpers/deep/format.ts', `export function deep(): string { return ${JSON.stringify(deep)}; }\n`);
      tmp.write('helpers/helper.ts', `import { deep } from './deep/format.ts';\nexport function label(): string { return ${JSON.stringify(helper)} + '+' + deep(); }\n`);
    };
    write('helper-v1', 'deep-v1');
    const path = tmp.write(
      'helpers/plugin.ts',
      `// @ts-nocheck
import { definePlugin, HarnessError } from ${RUNTIME};
import { label } from './helper.ts';
export default definePlugin({
  name: 'helpers',
  setup(ctx) {
    ctx.provide('testRuntimeProbe', { HarnessError });
    ctx.on('test/number', () => label());
  },
});
`,
    );
    await host.load({ module: path });
    const run = () => kernel.bus.waterfall('test/number', 0, () => -1) as unknown;
    expect(run()).toBe('helper-v1+deep-v1');

    write('helper-v2', 'deep-v1');
    await host.reload('helpers');
    expect(run()).toBe('helper-v2+deep-v1');

    write('helper-v2', 'deep-v2'); // only the helper of the helper changed
    await host.reload('helpers');
    expect(run()).toBe('helper-v2+deep-v2');

    // The runtime is not duplicated per generation: the plugin saw this process's HarnessError.
    expect(kernel.service<{ HarnessError: unknown }>('testRuntimeProbe')!.HarnessError).toBe(HarnessError);
  });
});
