import { beforeEach, describe, expect, it, vi } from 'vitest';
import { HookBus } from '../../runtime/kernel/bus.ts';
import { collectDiagnostics, declareTestHooks, deferred, flushMicrotasks, tick } from './support.ts';

let bus: HookBus;
beforeEach(() => {
  bus = new HookBus();
  declareTestHooks(bus);
});

describe('emit', () => {
  it('a throwing and a rejecting observer between two others: the others run, both errors are reported, the emitter is unaffected', async () => {
    const diagnostics = collectDiagnostics(bus);
    const seen: string[] = [];
    const thrown = new Error('sync boom');
    const rejected = new Error('async boom');
    bus.add('test/event', (e: { n: number }) => void seen.push(`first:${e.n}`), { owner: 'first' });
    bus.add(
      'test/event',
      () => {
        throw thrown;
      },
      { owner: 'thrower' },
    );
    bus.add(
      'test/event',
      async () => {
        await tick(1);
        throw rejected;
      },
      { owner: 'rejecter' },
    );
    bus.add('test/event', (e: { n: number }) => void seen.push(`last:${e.n}`), { owner: 'last' });

    const returned = bus.emit('test/event', { n: 1 });
    expect(returned).toBeUndefined();
    expect(seen).toEqual(['first:1', 'last:1']);
    // The synchronous failure is reported at once; the rejection when it happens.
    expect(diagnostics.map((d) => [d.code, d.level, d.source, d.error])).toEqual([['OBSERVER_FAILED', 'error', 'test/event', thrown]]);
    expect(diagnostics[0]!.message).toContain('thrower');
    expect(diagnostics[0]!.message).toContain('sync boom');
    await tick(20);
    expect(diagnostics.map((d) => [d.code, d.source, d.error])).toEqual([
      ['OBSERVER_FAILED', 'test/event', thrown],
      ['OBSERVER_FAILED', 'test/event', rejected],
    ]);
    expect(diagnostics[1]!.message).toContain('rejecter');

    // The bus still works afterwards, and the same observers run again.
    bus.emit('test/event', { n: 2 });
    expect(seen).toEqual(['first:1', 'last:1', 'first:2', 'last:2']);
  });

  it('observers are not awaited', async () => {
    const gate = deferred();
    const log: string[] = [];
    bus.add('test/event', async () => {
      await gate.promise;
      log.push('observer done');
    });
    bus.emit('test/event', { n: 1 });
    log.push('emitter continued');
    gate.resolve();
    await flushMicrotasks();
    expect(log).toEqual(['emitter continued', 'observer done']);
  });

  it('observers run in stage order, then registration order', () => {
    const order: string[] = [];
    bus.add('test/event', () => void order.push('b0'));
    bus.add('test/event', () => void order.push('c5'), { stage: 5 });
    bus.add('test/event', () => void order.push('a-1'), { stage: -1 });
    bus.add('test/event', () => void order.push('d0'));
    bus.emit('test/event', { n: 0 });
    expect(order).toEqual(['a-1', 'b0', 'd0', 'c5']);
  });

  it('a disposed observer no longer runs; the others keep their order', () => {
    const order: string[] = [];
    bus.add('test/event', () => void order.push('a'));
    const disposeB = bus.add('test/event', () => void order.push('b'));
    bus.add('test/event', () => void order.push('c'));
    disposeB();
    disposeB();
    expect(bus.count('test/event')).toBe(2);
    bus.emit('test/event', { n: 0 });
    expect(order).toEqual(['a', 'c']);
  });

  it('the same function added twice is two observers, and disposing one leaves the other', () => {
    let calls = 0;
    const fn = () => void calls++;
    const first = bus.add('test/event', fn);
    bus.add('test/event', fn);
    bus.emit('test/event', { n: 0 });
    expect(calls).toBe(2);
    first();
    bus.emit('test/event', { n: 0 });
    expect(calls).toBe(3);
    expect(bus.count('test/event')).toBe(1);
  });

  it('with no kernel/diagnostic observer a failure becomes a process warning, not a throw', () => {
    const emitWarning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      bus.add('test/event', () => {
        throw new Error('unobserved');
      });
      expect(() => bus.emit('test/event', { n: 1 })).not.toThrow();
      expect(emitWarning).toHaveBeenCalledTimes(1);
      const [message, options] = emitWarning.mock.calls[0]! as [string, { code: string }];
      expect(message).toContain('OBSERVER_FAILED');
      expect(message).toContain('unobserved');
      expect(options).toEqual({ code: 'OBSERVER_FAILED' });
    } finally {
      emitWarning.mockRestore();
    }
  });

  it('emitting an undeclared hook is UNKNOWN_HOOK; emitting a sink or waterfall is HOOK_MODE_CONFLICT', () => {
    expect(() => bus.emit('test/nope', {})).toThrow(expect.objectContaining({ code: 'UNKNOWN_HOOK' }));
    expect(() => bus.emit('test/sink', {})).toThrow(expect.objectContaining({ code: 'HOOK_MODE_CONFLICT' }));
    expect(() => bus.emit('test/number', {})).toThrow(expect.objectContaining({ code: 'HOOK_MODE_CONFLICT' }));
  });
});

describe('sink', () => {
  it('delivers to several sinks in stage, then registration order, each awaited before the next starts', async () => {
    const log: string[] = [];
    let active = 0;
    let maxActive = 0;
    const sink = (label: string, delayMs: number) => async (e: { n: number }) => {
      active++;
      maxActive = Math.max(maxActive, active);
      log.push(`${label}:start:${e.n}`);
      await tick(delayMs);
      log.push(`${label}:end:${e.n}`);
      active--;
    };
    bus.add('test/sink', sink('b', 5));
    bus.add('test/sink', sink('c', 1), { stage: 1 });
    bus.add('test/sink', sink('a', 10), { stage: -1 });
    await bus.deliver('test/sink', { n: 1 });
    expect(log).toEqual(['a:start:1', 'a:end:1', 'b:start:1', 'b:end:1', 'c:start:1', 'c:end:1']);
    expect(maxActive).toBe(1);
  });

  it("backpressure: the emitter's await does not resolve until a slow async sink has finished", async () => {
    const gate = deferred();
    const log: string[] = [];
    bus.add('test/sink', () => void log.push('sync first'));
    bus.add('test/sink', async () => {
      await gate.promise;
      log.push('slow done');
    });
    bus.add('test/sink', () => void log.push('after slow'));
    let delivered = false;
    const pending = bus.deliver('test/sink', { n: 1 });
    expect(pending).toBeInstanceOf(Promise);
    void pending!.then(() => (delivered = true));
    await tick(10);
    expect(delivered).toBe(false);
    expect(log).toEqual(['sync first']);
    gate.resolve();
    await pending;
    expect(delivered).toBe(true);
    expect(log).toEqual(['sync first', 'slow done', 'after slow']);
  });

  it('a failing async sink rejects the deliver with its error, and later sinks do not run', async () => {
    const failure = new Error('disk full');
    const log: string[] = [];
    bus.add('test/sink', async () => void log.push('a'));
    bus.add('test/sink', async () => {
      throw failure;
    });
    bus.add('test/sink', async () => void log.push('c'));
    await expect(bus.deliver('test/sink', { n: 1 })).rejects.toBe(failure);
    expect(log).toEqual(['a']);
  });

  it('a failing synchronous sink in a synchronous chain throws to the emitter', () => {
    const failure = new Error('sync sink failed');
    bus.add('test/sink', () => {
      throw failure;
    });
    expect(() => bus.deliver('test/sink', { n: 1 })).toThrow(failure);
  });

  it('a fully synchronous sink chain completes in the call and returns undefined (no promise)', () => {
    const log: number[] = [];
    bus.add('test/sink', (e: { n: number }) => void log.push(e.n));
    bus.add('test/sink', (e: { n: number }) => void log.push(e.n * 10));
    expect(bus.deliver('test/sink', { n: 2 })).toBeUndefined();
    expect(log).toEqual([2, 20]);
  });

  it('no sink: deliver returns undefined; disposing a sink removes it', async () => {
    expect(bus.deliver('test/sink', { n: 1 })).toBeUndefined();
    const log: number[] = [];
    const dispose = bus.add('test/sink', async (e: { n: number }) => void log.push(e.n));
    await bus.deliver('test/sink', { n: 1 });
    dispose();
    expect(bus.count('test/sink')).toBe(0);
    expect(bus.deliver('test/sink', { n: 2 })).toBeUndefined();
    expect(log).toEqual([1]);
  });

  it('delivering an undeclared hook is UNKNOWN_HOOK; delivering an emit hook is HOOK_MODE_CONFLICT', () => {
    expect(() => bus.deliver('test/nope', {})).toThrow(expect.objectContaining({ code: 'UNKNOWN_HOOK' }));
    expect(() => bus.deliver('test/event', {})).toThrow(expect.objectContaining({ code: 'HOOK_MODE_CONFLICT' }));
  });
});
