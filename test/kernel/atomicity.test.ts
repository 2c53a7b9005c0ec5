import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Next } from '../../runtime/kernel/bus.ts';
import { Kernel, type PluginContext } from '../../runtime/kernel/context.ts';
import { getErrorInfo, HarnessError } from '../../runtime/kernel/errors.ts';
import { definePlugin, PluginHost } from '../../runtime/kernel/plugin.ts';
import { declareTestHooks, tick } from './support.ts';

let kernel: Kernel;
let host: PluginHost;
beforeEach(() => {
  kernel = new Kernel();
  declareTestHooks(kernel.bus);
  host = new PluginHost(kernel);
});
afterEach(() => host.dispose());

/** A plugin whose setup registers three taps and an observer, awaiting between each step. */
function stepwisePlugin(name: string, options: { failAfter?: boolean; provide?: boolean } = {}) {
  return definePlugin({
    name,
    async setup(ctx: PluginContext) {
      for (let i = 0; i < 3; i++) {
        ctx.on('test/number', (p: number, next: Next<number, number>) => next(p) + 1);
        await tick(2);
      }
      ctx.on('test/event', () => {
        observed++;
      });
      await tick(2);
      if (options.failAfter) throw new Error('setup exploded after registering');
    },
  });
}
let observed = 0;

/** Dispatches on every timer turn and microtask burst until stopped; records what each saw. */
function dispatchLoop() {
  const seen: number[] = [];
  const observedAt: number[] = [];
  let running = true;
  const timer = setInterval(() => {
    for (let i = 0; i < 5; i++) {
      seen.push(kernel.bus.waterfall('test/number', 0, (p) => p));
      const before = observed;
      kernel.bus.emit('test/event', { n: i });
      observedAt.push(observed - before);
    }
  }, 0);
  const micro = (async () => {
    while (running) {
      seen.push(kernel.bus.waterfall('test/number', 0, (p) => p));
      await new Promise((r) => setImmediate(r));
    }
  })();
  return {
    seen,
    observedAt,
    async stop() {
      running = false;
      clearInterval(timer);
      await micro;
    },
  };
}

describe('atomic setup', () => {
  beforeEach(() => {
    observed = 0;
  });

  it('a setup that registers three taps and an observer and then throws: no concurrent dispatch ever sees any of them, none remain', async () => {
    const loop = dispatchLoop();
    let error: unknown;
    try {
      await host.load(stepwisePlugin('exploding', { failAfter: true }));
    } catch (e) {
      error = e;
    }
    await tick(5);
    await loop.stop();

    expect(loop.seen.length).toBeGreaterThan(20);
    expect(new Set(loop.seen)).toEqual(new Set([0]));
    expect(new Set(loop.observedAt)).toEqual(new Set([0]));
    expect(observed).toBe(0);

    expect(HarnessError.is(error)).toBe(true);
    const harnessError = error as HarnessError;
    expect(harnessError.code).toBe('PLUGIN_SETUP_FAILED');
    expect(harnessError.message).toContain('"exploding"');
    expect(harnessError.message).toContain('setup exploded after registering');
    expect((harnessError.cause as Error).message).toBe('setup exploded after registering');
    expect(harnessError.failure).toMatchObject({ code: 'PLUGIN_SETUP_FAILED', plugin: 'exploding' });

    expect(kernel.bus.count('test/number')).toBe(0);
    expect(kernel.bus.count('test/event')).toBe(0);
    expect(host.has('exploding')).toBe(false);
    // The name is free again.
    await host.load(stepwisePlugin('exploding'));
    expect(kernel.bus.waterfall('test/number', 0, (p) => p)).toBe(3);
  });

  it('a setup that succeeds: each dispatch sees none or all three taps, and all three once loaded', async () => {
    const loop = dispatchLoop();
    const info = await host.load(stepwisePlugin('stepwise'));
    const afterLoad = kernel.bus.waterfall('test/number', 0, (p) => p);
    await tick(5);
    await loop.stop();

    expect(info).toEqual({ name: 'stepwise', generation: 1 });
    expect(afterLoad).toBe(3);
    expect(loop.seen.length).toBeGreaterThan(20);
    expect(loop.seen.every((n) => n === 0 || n === 3)).toBe(true);
    expect(loop.seen).toContain(0);
    expect(loop.seen).toContain(3);
    // Once visible, never invisible again.
    expect(loop.seen.slice(loop.seen.indexOf(3)).every((n) => n === 3)).toBe(true);
    expect(loop.observedAt.every((n) => n === 0 || n === 1)).toBe(true);
    expect(kernel.bus.count('test/number')).toBe(3);
    expect(kernel.bus.count('test/event')).toBe(1);
  });

  it('a listener registered after setup (e.g. from a timer) is live at once and still undone on unload', async () => {
    let ctxRef: PluginContext | undefined;
    await host.load(definePlugin({ name: 'late', setup: (ctx) => void (ctxRef = ctx) }));
    ctxRef!.on('test/number', (p: number, next: Next<number, number>) => next(p) + 1);
    expect(kernel.bus.waterfall('test/number', 0, (p) => p)).toBe(1);
    await host.unload('late');
    expect(kernel.bus.count('test/number')).toBe(0);
  });

  it('a setup that throws synchronously is PLUGIN_SETUP_FAILED too', async () => {
    const plugin = definePlugin({
      name: 'sync-throw',
      setup(ctx) {
        ctx.on('test/number', (p: number, next: Next<number, number>) => next(p));
        throw new TypeError('bad');
      },
    });
    const error = await host.load(plugin).catch((e: unknown) => e);
    expect(getErrorInfo(error).codes).toEqual(['PLUGIN_SETUP_FAILED']);
    expect(((error as HarnessError).cause as Error).name).toBe('TypeError');
    expect(kernel.bus.count('test/number')).toBe(0);
  });

  it('effects added with onDispose by a failed setup are run', async () => {
    const log: string[] = [];
    const plugin = definePlugin({
      name: 'cleanup',
      async setup(ctx) {
        ctx.onDispose(() => log.push('timer cleared'));
        ctx.onDispose(() => log.push('socket closed'));
        throw new Error('no');
      },
    });
    await expect(host.load(plugin)).rejects.toMatchObject({ code: 'PLUGIN_SETUP_FAILED' });
    expect(log).toEqual(['socket closed', 'timer cleared']);
  });
});
