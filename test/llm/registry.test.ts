/**
 * Adapter routes (seed 002 14.3 "注册协议", issue #3 "Deliver 3" and the registry acceptance items):
 * atomic route sets through plugins, DUPLICATE_ADAPTER / INVALID_ROUTE, `replace`, disposed handles,
 * `llm/adapters-updated`, and hot reload without a window of NO_ADAPTER.
 */
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { definePlugin, type AdapterRegistrationHandle, type AdaptersUpdatedEvent, type Harness, type RouteInfo } from '../../runtime/index.ts';
import { FakeAdapter, baseOptions, chunk, codeOf, collect, deferred, finishStop, harnessWith, runtimeIndex, tempDir, text, tick } from './support.ts';

let harness: Harness | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function updates(h: Harness): AdaptersUpdatedEvent[] {
  const seen: AdaptersUpdatedEvent[] = [];
  h.kernel.bus.add('llm/adapters-updated', (event: AdaptersUpdatedEvent) => void seen.push(event), { owner: 'test' });
  return seen;
}

const providersOf = (h: Harness) =>
  h.ctx.llm
    .routes()
    .map((r) => r.provider)
    .sort();
const tagged = (tag: string) => new FakeAdapter(() => [chunk(text(0, tag)), chunk(finishStop)]);

async function firstText(h: Harness, provider: string): Promise<string> {
  const chunks = await collect(h.llm.stream(baseOptions({ provider })));
  const first = chunks[0]!;
  return first.type === 'text-delta' ? first.text : `finish:${JSON.stringify(first)}`;
}

describe('registerAdapter through plugins', () => {
  it('a plugin registers a whole route set, visible when setup resolves, with one llm/adapters-updated', async () => {
    const adapter = tagged('A');
    let staged: readonly RouteInfo[] | undefined;
    let handle: AdapterRegistrationHandle | undefined;
    harness = await harnessWith();
    const events = updates(harness);
    await harness.host.load(
      definePlugin({
        name: 'provider-a',
        async setup(ctx) {
          handle = ctx.llm.registerAdapter(['a1', 'a2', 'a3'], adapter);
          await tick();
          staged = ctx.llm.routes();
        },
      }),
    );
    expect(staged).toEqual([]);
    expect(providersOf(harness)).toEqual(['a1', 'a2', 'a3']);
    expect(handle!.providers).toEqual(['a1', 'a2', 'a3']);
    expect(handle!.disposed).toBe(false);
    await tick();
    const routes = harness.ctx.llm.routes();
    expect(new Set(routes.map((r) => r.registrationId)).size).toBe(1);
    expect(routes).toEqual(['a1', 'a2', 'a3'].map((provider) => ({ provider, kind: 'FakeAdapter', owner: 'provider-a', registrationId: routes[0]!.registrationId })));
    expect(events).toEqual([{ routes }]);
    expect(Object.isFrozen(events[0]!.routes[0])).toBe(true);
    expect(await firstText(harness, 'a2')).toBe('A');
  });

  it('the kind of a route is its adapter replay format kind when it has one', async () => {
    harness = await harnessWith();
    const adapter = new (class extends FakeAdapter {
      override readonly replayFormat = { kind: 'fake-chat', version: 3 };
    })();
    harness.ctx.llm.registerAdapter(['k'], adapter);
    expect(harness.ctx.llm.routes()).toEqual([expect.objectContaining({ provider: 'k', kind: 'fake-chat', owner: 'harness' })]);
  });

  it('DUPLICATE_ADAPTER: a plugin whose setup takes a route of another fails to load, nothing of it is visible, current routes keep serving', async () => {
    harness = await harnessWith(definePlugin({ name: 'owner', setup: (ctx) => void ctx.llm.registerAdapter(['shared', 'own'], tagged('owner')) }));
    await tick();
    const before = harness.ctx.llm.routes();
    const events = updates(harness);
    const intruder = tagged('intruder');
    const error = await harness.host
      .load(
        definePlugin({
          name: 'intruder',
          setup(ctx) {
            ctx.on('llm/stream', (options, next) => next(options));
            ctx.llm.registerAdapter(['fresh'], intruder);
            ctx.llm.registerAdapter(['other', 'shared'], intruder);
          },
        }),
      )
      .then(
        () => undefined,
        (e: unknown) => e as { code: string; failure: Record<string, unknown> },
      );
    expect(error?.code).toBe('PLUGIN_SETUP_FAILED');
    expect(error?.failure.causeCode).toBe('DUPLICATE_ADAPTER');
    await tick();
    expect(harness.ctx.llm.routes()).toEqual(before);
    expect(harness.ctx.llm.hasRoute('fresh')).toBe(false);
    expect(harness.ctx.llm.hasRoute('other')).toBe(false);
    expect(harness.kernel.bus.count('llm/stream')).toBe(0);
    expect(harness.host.has('intruder')).toBe(false);
    expect(events).toEqual([]);
    expect(await firstText(harness, 'shared')).toBe('owner');
    expect(intruder.calls).toHaveLength(0);
  });

  it('DUPLICATE_ADAPTER found at commit (the route was taken while setup awaited): the load fails whole', async () => {
    harness = await harnessWith();
    const gate = deferred();
    const loading = harness.host.load(
      definePlugin({
        name: 'slow',
        async setup(ctx) {
          ctx.llm.registerAdapter(['slow-own'], tagged('slow'));
          ctx.llm.registerAdapter(['contested'], tagged('slow'));
          await gate.promise;
        },
      }),
    );
    await tick();
    harness.ctx.llm.registerAdapter(['contested'], tagged('root'));
    gate.resolve();
    await expect(loading).rejects.toMatchObject({ code: 'PLUGIN_SETUP_FAILED', failure: { causeCode: 'DUPLICATE_ADAPTER' } });
    expect(providersOf(harness)).toEqual(['contested']);
    expect(await firstText(harness, 'contested')).toBe('root');
  });

  it('a live registration with a taken route throws DUPLICATE_ADAPTER and changes nothing', async () => {
    harness = await harnessWith();
    harness.ctx.llm.registerAdapter(['x'], tagged('first'));
    await tick();
    const events = updates(harness);
    expect(await codeOf(() => harness!.ctx.llm.registerAdapter(['y', 'x'], tagged('second')))).toBe('DUPLICATE_ADAPTER');
    expect(providersOf(harness)).toEqual(['x']);
    expect(await firstText(harness, 'x')).toBe('first');
    await tick();
    expect(events).toEqual([]);
  });

  it('INVALID_ROUTE for empty or non-string names and a non-array; DUPLICATE_ADAPTER for a name twice in one set; nothing registered', async () => {
    harness = await harnessWith();
    const events = updates(harness);
    const adapter = tagged('x');
    for (const providers of [[''], ['ok', '   '], ['ok', 42], 'ok', [null]] as unknown as string[][]) {
      expect(await codeOf(() => harness!.ctx.llm.registerAdapter(providers, adapter))).toBe('INVALID_ROUTE');
    }
    expect(await codeOf(() => harness!.ctx.llm.registerAdapter(['a', 'b', 'a'], adapter))).toBe('DUPLICATE_ADAPTER');
    expect(await codeOf(() => harness!.ctx.llm.registerAdapter(['a'], {} as FakeAdapter))).toBe('INVALID_REQUEST');
    expect(harness.ctx.llm.routes()).toEqual([]);
    await tick();
    expect(events).toEqual([]);
  });
});

describe('registration handles', () => {
  it('replace(providers) swaps the whole set atomically; lookups around it never see half a set', async () => {
    harness = await harnessWith();
    const adapter = tagged('r');
    const handle = harness.ctx.llm.registerAdapter(['a', 'b', 'c'], adapter);
    const other = harness.ctx.llm.registerAdapter(['taken'], tagged('other'));
    const sets = [['a', 'b', 'c'], ['d', 'e'], ['a', 'e', 'f', 'g'], []];
    const allowed = new Set(sets.map((set) => [...set].sort().join(',')));
    const bad: string[] = [];
    const check = (where: string) => {
      const mine = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].filter((p) => harness!.llm.registry.lookup(p)?.adapter === adapter);
      if (!allowed.has(mine.join(','))) bad.push(`${where}: ${mine.join(',')}`);
      if (!harness!.ctx.llm.hasRoute('taken')) bad.push(`${where}: taken missing`);
    };
    harness.kernel.bus.add('llm/adapters-updated', () => check('observer'), { owner: 'test' });
    let stop = false;
    let lookups = 0;
    const hammer = (async () => {
      while (!stop) {
        check('loop');
        lookups++;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    })();
    let failedReplaces = 0;
    for (let round = 0; round < 200; round++) {
      handle.replace(sets[round % sets.length]!);
      check('after replace');
      // A refused replace leaves the set as it was.
      const before = handle.providers;
      expect(await codeOf(() => handle.replace(['z', 'taken']))).toBe('DUPLICATE_ADAPTER');
      failedReplaces++;
      expect(handle.providers).toBe(before);
      check('after refused replace');
      if (round % 3 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      else await Promise.resolve();
    }
    stop = true;
    await hammer;
    expect(bad).toEqual([]);
    expect(lookups).toBeGreaterThan(20);
    expect(failedReplaces).toBe(200);
    other();
  });

  it('replace([]) is legal and removes every route; the handle can take routes again', async () => {
    harness = await harnessWith();
    const events = updates(harness);
    const handle = harness.ctx.llm.registerAdapter(['a', 'b'], tagged('x'));
    await tick();
    handle.replace([]);
    expect(handle.providers).toEqual([]);
    expect(harness.ctx.llm.routes()).toEqual([]);
    expect((await collect(harness.llm.stream(baseOptions({ provider: 'a' }))))[0]).toMatchObject({ type: 'finish', finish: { kind: 'error', failure: { code: 'NO_ADAPTER' } } });
    await tick();
    handle.replace(['c']);
    expect(providersOf(harness)).toEqual(['c']);
    await tick();
    expect(events.map((e) => e.routes.map((r) => r.provider))).toEqual([['a', 'b'], [], ['c']]);
  });

  it('replace during setup is staged with the rest of the plugin', async () => {
    harness = await harnessWith(
      definePlugin({
        name: 'p',
        setup(ctx) {
          const handle = ctx.llm.registerAdapter(['first'], tagged('p'));
          handle.replace(['second', 'third']);
        },
      }),
    );
    expect(providersOf(harness)).toEqual(['second', 'third']);
  });

  it('a disposed handle: routes gone, disposed true, replace → REGISTRATION_DISPOSED, disposing again is a no-op', async () => {
    harness = await harnessWith();
    const handle = harness.ctx.llm.registerAdapter(['a'], tagged('x'));
    handle();
    expect(handle.disposed).toBe(true);
    expect(harness.ctx.llm.routes()).toEqual([]);
    expect(await codeOf(() => handle.replace(['b']))).toBe('REGISTRATION_DISPOSED');
    expect(await codeOf(() => handle.replace([]))).toBe('REGISTRATION_DISPOSED');
    handle();
    expect(harness.ctx.llm.routes()).toEqual([]);
  });

  it('a handle whose plugin was unloaded is disposed too (REGISTRATION_DISPOSED, no silent re-route)', async () => {
    let handle: AdapterRegistrationHandle | undefined;
    harness = await harnessWith(definePlugin({ name: 'p', setup: (ctx) => void (handle = ctx.llm.registerAdapter(['a'], tagged('x'))) }));
    await harness.host.unload('p');
    expect(harness.ctx.llm.routes()).toEqual([]);
    expect(handle!.disposed).toBe(true);
    expect(await codeOf(() => handle!.replace(['b']))).toBe('REGISTRATION_DISPOSED');
    expect(harness.ctx.llm.routes()).toEqual([]);
  });
});

describe('hot reload', () => {
  function writeReloadable(dir: ReturnType<typeof tempDir>, name: string): string {
    return dir.write(
      `${name}.ts`,
      `import { definePlugin, LlmAdapter } from ${JSON.stringify(pathToFileURL(runtimeIndex).href)};
const state = (globalThis as any).__llmReloadTest;
class GenerationAdapter extends LlmAdapter {
  constructor(readonly generation: number) { super(); }
  listModels() { return [{ id: 'm' }]; }
  async *stream() {
    yield { type: 'text-delta' as const, index: 0, text: 'gen' + this.generation };
    yield { type: 'finish' as const, finish: { kind: 'stop' as const } };
  }
}
export default definePlugin({
  name: ${JSON.stringify(name)},
  async setup(ctx) {
    ctx.onDispose(() => { state.disposed.push(ctx.plugin.generation); });
    ctx.llm.registerAdapter(['p1', 'p2'], new GenerationAdapter(ctx.plugin.generation));
    state.handles.push(ctx.llm.registerAdapter(['p3'], new GenerationAdapter(ctx.plugin.generation)));
    await new Promise((resolve) => setTimeout(resolve, 1));
  },
});
`,
    );
  }

  it('a plugin reload swaps routes with no window in which NO_ADAPTER can be observed', async () => {
    const state = { disposed: [] as number[], handles: [] as AdapterRegistrationHandle[] };
    (globalThis as Record<string, unknown>).__llmReloadTest = state;
    const dir = tempDir('llm-reload');
    cleanups.push(() => dir.cleanup());
    const path = writeReloadable(dir, 'reloadable');
    harness = await harnessWith();
    await harness.host.load({ module: path });
    const misses: string[] = [];
    const providers = ['p1', 'p2', 'p3'];
    harness.kernel.bus.add(
      'llm/adapters-updated',
      (event: AdaptersUpdatedEvent) => {
        for (const p of providers) {
          if (!harness!.ctx.llm.hasRoute(p)) misses.push(`observer hasRoute ${p}`);
          if (!event.routes.some((r) => r.provider === p)) misses.push(`event table lacks ${p}`);
        }
        harness!.llm.prepareCall({ provider: 'p1', model: 'm' }).catch((e: { code?: string }) => misses.push(`observer prepareCall ${e.code}`));
      },
      { owner: 'test' },
    );
    let stop = false;
    let probes = 0;
    const seenGenerations = new Set<string>();
    const hammers = [0, 1, 2].map(async (k) => {
      while (!stop) {
        for (const p of providers) if (!harness!.ctx.llm.hasRoute(p)) misses.push(`hasRoute ${p}`);
        try {
          const prepared = await harness!.llm.prepareCall({ provider: providers[k]!, model: 'm' });
          const chunks = await collect(prepared.stream({ ...prepared.config, messages: [] }));
          const first = chunks[0]!;
          if (first.type === 'text-delta') seenGenerations.add(first.text);
          else misses.push(`stream ${JSON.stringify(first)}`);
        } catch (error) {
          misses.push(`prepareCall ${(error as { code?: string }).code}`);
        }
        probes++;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    });
    const ids = new Set<number>();
    for (let i = 0; i < 25; i++) {
      await harness.host.reload('reloadable');
      ids.add(harness.ctx.llm.routes().find((r) => r.provider === 'p1')!.registrationId);
    }
    stop = true;
    await Promise.all(hammers);
    await tick(5);
    expect(misses).toEqual([]);
    expect(probes).toBeGreaterThan(25);
    expect(ids.size).toBe(25);
    expect(await firstText(harness, 'p1')).toBe('gen26');
    expect(seenGenerations.size).toBeGreaterThan(1);
    // Every old generation was disposed, and its handles are dead.
    expect(state.disposed.sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(state.handles.slice(0, 25).every((h) => h.disposed)).toBe(true);
    expect(await codeOf(() => state.handles[0]!.replace(['p9']))).toBe('REGISTRATION_DISPOSED');
    expect(state.handles[25]!.disposed).toBe(false);
  });

  it('a reload whose new generation takes a foreign route fails; the old generation keeps serving', async () => {
    const state = { disposed: [] as number[], handles: [] as AdapterRegistrationHandle[] };
    (globalThis as Record<string, unknown>).__llmReloadTest = state;
    const dir = tempDir('llm-reload-dup');
    cleanups.push(() => dir.cleanup());
    const path = writeReloadable(dir, 'reloadable-dup');
    harness = await harnessWith();
    await harness.host.load({ module: path });
    const before = harness.ctx.llm.routes();
    dir.write(
      'reloadable-dup.ts',
      `import { definePlugin, LlmAdapter } from ${JSON.stringify(pathToFileURL(runtimeIndex).href)};
class A extends LlmAdapter { async *stream() { yield { type: 'finish' as const, finish: { kind: 'stop' as const } }; } }
export default definePlugin({ name: 'reloadable-dup', setup(ctx) {
  ctx.llm.registerAdapter(['p1', 'p2', 'p3'], new A());
  ctx.llm.registerAdapter(['root-owned'], new A());
} });
`,
    );
    harness.ctx.llm.registerAdapter(['root-owned'], tagged('root'));
    await expect(harness.host.reload('reloadable-dup')).rejects.toMatchObject({ code: 'PLUGIN_SETUP_FAILED' });
    expect(harness.ctx.llm.routes().filter((r) => r.provider !== 'root-owned')).toEqual(before);
    expect(await firstText(harness, 'p1')).toBe('gen1');
    expect(state.handles[0]!.disposed).toBe(false);
  });
});
