import { beforeEach, describe, expect, it } from 'vitest';
import { HookBus, type Next } from '../../runtime/kernel/bus.ts';
import { HarnessError } from '../../runtime/kernel/errors.ts';
import { declareTestHooks } from './support.ts';

let bus: HookBus;
beforeEach(() => {
  bus = new HookBus();
  declareTestHooks(bus);
});

describe('waterfall', () => {
  it('wraps: a middleware changes the payload on the way in and the result on the way out', () => {
    const innerSaw: number[] = [];
    bus.add('test/number', (p: number, next: Next<number, number>) => next(p + 1) * 10);
    const result = bus.waterfall('test/number', 1, (p) => {
      innerSaw.push(p);
      return p * 2;
    });
    expect(innerSaw).toEqual([2]);
    expect(result).toBe(40);
  });

  it('next() with no argument passes on the payload the middleware received', () => {
    const innerSaw: number[] = [];
    bus.add('test/number', (p: number, next: Next<number, number>) => next(p + 100));
    bus.add('test/number', (_p: number, next: Next<number, number>) => next());
    expect(bus.waterfall('test/number', 1, (p) => (innerSaw.push(p), p))).toBe(101);
    expect(innerSaw).toEqual([101]);
  });

  it('replaces: a middleware that does not call next answers alone (inner and later middleware never run)', () => {
    let innerCalls = 0;
    let laterCalls = 0;
    bus.add('test/number', () => 7);
    bus.add('test/number', (p: number, next: Next<number, number>) => (laterCalls++, next(p)));
    expect(bus.waterfall('test/number', 1, () => (innerCalls++, 0))).toBe(7);
    expect(innerCalls).toBe(0);
    expect(laterCalls).toBe(0);
  });

  it('vetoes: a throwing middleware throws to the dispatcher and nothing downstream runs', () => {
    let innerCalls = 0;
    const veto = new HarnessError('VETOED', 'no');
    bus.add('test/number', () => {
      throw veto;
    });
    expect(() => bus.waterfall('test/number', 1, () => (innerCalls++, 0))).toThrow(veto);
    expect(innerCalls).toBe(0);
  });

  it('next(replacement) gives downstream the replacement payload', () => {
    const seen: number[] = [];
    bus.add('test/number', (_p: number, next: Next<number, number>) => next(42));
    bus.add('test/number', (p: number, next: Next<number, number>) => (seen.push(p), next(p + 1)));
    expect(bus.waterfall('test/number', 0, (p) => (seen.push(p), p))).toBe(43);
    expect(seen).toEqual([42, 43]);
  });

  it('double next runs the whole downstream chain twice (each next is bound to its own position)', () => {
    const calls = { b: 0, c: 0, inner: 0 };
    const innerSaw: number[] = [];
    bus.add('test/number', (p: number, next: Next<number, number>) => next(p) + next(p + 1000));
    bus.add('test/number', (p: number, next: Next<number, number>) => (calls.b++, next(p + 10)));
    bus.add('test/number', (p: number, next: Next<number, number>) => (calls.c++, next(p + 100)));
    const result = bus.waterfall('test/number', 1, (p) => (calls.inner++, innerSaw.push(p), p));
    expect(calls).toEqual({ b: 2, c: 2, inner: 2 });
    expect(innerSaw).toEqual([111, 1111]);
    expect(result).toBe(111 + 1111);
  });

  it('double next from a middle position reruns only the chain below it', () => {
    const calls = { a: 0, b: 0, c: 0, inner: 0 };
    bus.add('test/number', (p: number, next: Next<number, number>) => (calls.a++, next(p)));
    bus.add('test/number', (p: number, next: Next<number, number>) => (calls.b++, next(p) + next(p)));
    bus.add('test/number', (p: number, next: Next<number, number>) => (calls.c++, next(p)));
    expect(bus.waterfall('test/number', 5, (p) => (calls.inner++, p))).toBe(10);
    expect(calls).toEqual({ a: 1, b: 1, c: 2, inner: 2 });
  });

  it('a retry-style middleware can call next again after the first attempt failed', async () => {
    let attempts = 0;
    bus.add('test/async', async (p: number, next: Next<number, Promise<number>>) => {
      try {
        return await next(p);
      } catch {
        return next(p);
      }
    });
    const order: string[] = [];
    bus.add('test/async', async (p: number, next: Next<number, Promise<number>>) => (order.push('b'), next(p)));
    const result = await bus.waterfall('test/async', 3, async (p) => {
      order.push('inner');
      if (++attempts === 1) throw new Error('first attempt fails');
      return p * 3;
    });
    expect(result).toBe(9);
    expect(order).toEqual(['b', 'inner', 'b', 'inner']);
  });

  it('orders by stage (lower is outermost), then registration order', () => {
    const order: string[] = [];
    const tap = (label: string, stage?: number) => bus.add('test/number', (p: number, next: Next<number, number>) => (order.push(label), next(p)), stage === undefined ? {} : { stage });
    tap('s0-first');
    tap('s10', 10);
    tap('s-5', -5);
    tap('s0-second', 0);
    tap('s10-second', 10);
    tap('s-5-second', -5);
    bus.waterfall('test/number', 0, (p) => (order.push('inner'), p));
    expect(order).toEqual(['s-5', 's-5-second', 's0-first', 's0-second', 's10', 's10-second', 'inner']);
  });

  it('a stage that is not a finite number is INVALID_LISTENER (it would make the order undefined)', () => {
    expect(() => bus.add('test/number', (p: number) => p, { stage: Number.NaN })).toThrow(expect.objectContaining({ code: 'INVALID_LISTENER' }));
    expect(bus.count('test/number')).toBe(0);
  });

  it('async results pass through: each layer awaits next and transforms', async () => {
    bus.add('test/async', async (p: number, next: Next<number, Promise<number>>) => (await next(p * 2)) + 1);
    bus.add('test/async', async (p: number, next: Next<number, Promise<number>>) => {
      await new Promise((r) => setTimeout(r, 1));
      return (await next(p + 3)) * 10;
    });
    const result = bus.waterfall('test/async', 1, async (p) => p);
    expect(result).toBeInstanceOf(Promise);
    expect(await result).toBe(51); // ((1*2)+3)=5 → *10 = 50 → +1 = 51
  });

  it('async iterable results pass through an async function* middleware that transforms the chunks', async () => {
    const log: string[] = [];
    bus.add('test/stream', async function* (request: { count: number }, next: Next<{ count: number }, AsyncIterable<string>>) {
      log.push('outer:start');
      for await (const chunk of next({ count: request.count + 1 })) yield `<${chunk}>`;
      log.push('outer:end');
    });
    bus.add('test/stream', async function* (request: { count: number }, next: Next<{ count: number }, AsyncIterable<string>>) {
      for await (const chunk of next(request)) {
        if (chunk !== 'c1') yield chunk.toUpperCase();
      }
      yield 'TAIL';
    });
    const stream = bus.waterfall('test/stream', { count: 2 }, async function* (request) {
      log.push(`inner:${request.count}`);
      for (let i = 0; i < request.count; i++) yield `c${i}`;
    });
    expect(log).toEqual([]); // lazy: nothing runs until iterated
    const chunks: string[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks).toEqual(['<C0>', '<C2>', '<TAIL>']);
    expect(log).toEqual(['outer:start', 'inner:3', 'outer:end']);
  });

  it('with no listener, inner is called directly with the payload and its result returned as is', () => {
    const result = { value: 1 };
    let saw: unknown;
    const inner = (p: unknown) => ((saw = p), result);
    const payload = { p: 1 };
    expect(bus.waterfall('test/gen', payload as never, inner as never)).toBe(result);
    expect(saw).toBe(payload);
  });

  it('a disposer removes its tap (and only its tap); calling it twice is harmless', () => {
    const order: string[] = [];
    const disposeA = bus.add('test/number', (p: number, next: Next<number, number>) => (order.push('a'), next(p)));
    bus.add('test/number', (p: number, next: Next<number, number>) => (order.push('b'), next(p)));
    expect(bus.count('test/number')).toBe(2);
    disposeA();
    disposeA();
    expect(bus.count('test/number')).toBe(1);
    bus.waterfall('test/number', 0, (p) => p);
    expect(order).toEqual(['b']);
  });

  it('the chain follows every change of the tap list (built lazily, rebuilt after each change), also with many taps', () => {
    const run = () => bus.waterfall('test/number', 0, (p) => p);
    expect(run()).toBe(0);
    const disposers = Array.from({ length: 200 }, (_, i) => bus.add('test/number', (p: number, next: Next<number, number>) => next(p + 1) + (i === 0 ? 1000 : 0)));
    expect(run()).toBe(1200);
    expect(run()).toBe(1200);
    disposers[0]!();
    expect(run()).toBe(199);
    for (const dispose of disposers.slice(1, 150)) dispose();
    expect(run()).toBe(50);
    bus.add('test/number', (p: number, next: Next<number, number>) => next(p) * 2, { stage: -1 });
    expect(run()).toBe(100);
    // Another hook on the same bus has a chain of its own.
    bus.add('test/async', async (p: number, next: Next<number, Promise<number>>) => (await next(p)) + 0.5);
    expect(run()).toBe(100);
  });

  it('a tap added or removed during a dispatch does not change the chain that dispatch runs', async () => {
    const order: string[] = [];
    let disposeB = () => {};
    bus.add('test/async', async (p: number, next: Next<number, Promise<number>>) => {
      order.push('a');
      disposeB();
      bus.add('test/async', async (q: number, n: Next<number, Promise<number>>) => (order.push('late'), n(q)));
      await Promise.resolve();
      return next(p);
    });
    disposeB = bus.add('test/async', async (p: number, next: Next<number, Promise<number>>) => (order.push('b'), next(p)));
    await bus.waterfall('test/async', 0, async (p) => (order.push('inner'), p));
    expect(order).toEqual(['a', 'b', 'inner']);
  });

  it('UNKNOWN_HOOK for an undeclared hook: dispatching and listening', () => {
    const dispatch = () => bus.waterfall('test/undeclared', 1, (p) => p);
    expect(dispatch).toThrow(HarnessError);
    expect(dispatch).toThrow(expect.objectContaining({ code: 'UNKNOWN_HOOK' }));
    expect(() => bus.add('test/undeclared', () => 1)).toThrow(expect.objectContaining({ code: 'UNKNOWN_HOOK' }));
  });

  it('HOOK_MODE_CONFLICT when a name is declared with a second mode; re-declaring the same mode is fine', () => {
    bus.declare('test/number', 'waterfall');
    let error: unknown;
    try {
      bus.declare('test/number', 'emit');
    } catch (e) {
      error = e;
    }
    expect(HarnessError.is(error)).toBe(true);
    expect((error as HarnessError).code).toBe('HOOK_MODE_CONFLICT');
    expect(bus.modeOf('test/number')).toBe('waterfall');
  });

  it('dispatching a hook of another mode as a waterfall is HOOK_MODE_CONFLICT, not a silent inner call', () => {
    let innerCalls = 0;
    expect(() => bus.waterfall('test/event', 1, () => innerCalls++)).toThrow(expect.objectContaining({ code: 'HOOK_MODE_CONFLICT' }));
    expect(() => bus.waterfall('kernel/diagnostic', 1, () => innerCalls++)).toThrow(expect.objectContaining({ code: 'HOOK_MODE_CONFLICT' }));
    expect(innerCalls).toBe(0);
  });

  it('INVALID_HOOK_NAME for a name that is not area/action', () => {
    expect(() => bus.declare('nope', 'emit')).toThrow(expect.objectContaining({ code: 'INVALID_HOOK_NAME' }));
  });
});
