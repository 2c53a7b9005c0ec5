import { describe, expect, it } from 'vitest';
import type { Diagnostic } from '../../runtime/kernel/bus.ts';
import { HarnessError } from '../../runtime/kernel/errors.ts';
import { Fiber, Scope } from '../../runtime/kernel/fiber.ts';
import { deferred, tick } from './support.ts';

function fiber(name = 'f') {
  const reports: Diagnostic[] = [];
  return { fiber: new Fiber(name, (d) => void reports.push(d)), reports };
}

describe('fibers', () => {
  it('disposes in reverse order, each disposer once, even when dispose is called twice', async () => {
    const { fiber: f } = fiber();
    const order: string[] = [];
    f.add(() => order.push('a'));
    f.add(async () => {
      await tick(1);
      order.push('b');
    });
    f.add(() => order.push('c'));
    const first = f.dispose();
    const second = f.dispose();
    expect(second).toBe(first);
    await first;
    await f.dispose();
    expect(order).toEqual(['c', 'b', 'a']);
  });

  it('an async disposer is awaited before the next one runs', async () => {
    const { fiber: f } = fiber();
    const order: string[] = [];
    f.add(() => order.push('first added'));
    f.add(async () => {
      order.push('slow start');
      await tick(5);
      order.push('slow end');
    });
    await f.dispose();
    expect(order).toEqual(['slow start', 'slow end', 'first added']);
  });

  it('an early disposer runs once and is not run again by dispose', async () => {
    const { fiber: f } = fiber();
    let calls = 0;
    const undo = f.add(() => calls++);
    undo();
    undo();
    await f.dispose();
    expect(calls).toBe(1);
  });

  it('signal aborts when disposal starts', async () => {
    const { fiber: f } = fiber();
    expect(f.signal.aborted).toBe(false);
    const done = f.dispose();
    expect(f.signal.aborted).toBe(true);
    expect((f.signal.reason as HarnessError).code).toBe('FIBER_DISPOSED');
    await done;
  });

  it('a dispose during setup waits for setup to finish before running any disposer', async () => {
    const { fiber: f } = fiber();
    const order: string[] = [];
    const gate = deferred();
    const setup = f.run(async () => {
      f.add(() => order.push('dispose 1'));
      await gate.promise;
      f.add(() => order.push('dispose 2'));
      order.push('setup done');
      return 'value';
    });
    await tick(1);
    const disposal = f.dispose();
    await tick(5);
    expect(order).toEqual([]);
    gate.resolve();
    await expect(setup).resolves.toBe('value');
    await disposal;
    expect(order).toEqual(['setup done', 'dispose 2', 'dispose 1']);
  });

  it('a dispose during a setup that fails still waits for it, then disposes', async () => {
    const { fiber: f } = fiber();
    const order: string[] = [];
    const gate = deferred();
    const setup = f.run(async () => {
      f.add(() => order.push('undo'));
      await gate.promise;
      throw new Error('setup failed');
    });
    const disposal = f.dispose();
    await tick(2);
    expect(order).toEqual([]);
    gate.resolve();
    await expect(setup).rejects.toThrow('setup failed');
    await disposal;
    expect(order).toEqual(['undo']);
  });

  it('refuses new effects once disposal started: FIBER_DISPOSED, and the refused disposer ran', async () => {
    const { fiber: f } = fiber();
    const gate = deferred();
    f.add(() => gate.promise);
    const disposal = f.dispose();
    let ran = 0;
    let error: unknown;
    try {
      f.add(() => ran++);
    } catch (e) {
      error = e;
    }
    expect(HarnessError.is(error) && error.code).toBe('FIBER_DISPOSED');
    expect(ran).toBe(1);
    gate.resolve();
    await disposal;
    expect(() => f.add(() => ran++)).toThrow(expect.objectContaining({ code: 'FIBER_DISPOSED' }));
    expect(ran).toBe(2);
  });

  it('a failing disposer is reported (DISPOSER_FAILED) and the rest still run', async () => {
    const { fiber: f, reports } = fiber('plugin:x#1');
    const order: string[] = [];
    const syncFailure = new Error('sync undo failed');
    const asyncFailure = new Error('async undo failed');
    f.add(() => order.push('a'));
    f.add(() => {
      throw syncFailure;
    });
    f.add(() => order.push('b'));
    f.add(async () => {
      throw asyncFailure;
    });
    f.add(() => order.push('c'));
    await expect(f.dispose()).resolves.toBeUndefined();
    expect(order).toEqual(['c', 'b', 'a']);
    expect(reports.map((r) => [r.code, r.level, r.source, r.error])).toEqual([
      ['DISPOSER_FAILED', 'error', 'plugin:x#1', asyncFailure],
      ['DISPOSER_FAILED', 'error', 'plugin:x#1', syncFailure],
    ]);
  });

  it('an early disposer that fails is reported too', () => {
    const { fiber: f, reports } = fiber();
    const undo = f.add(() => {
      throw new Error('nope');
    });
    expect(() => undo()).not.toThrow();
    expect(reports.map((r) => r.code)).toEqual(['DISPOSER_FAILED']);
  });

  it('child fibers are disposed with the parent, before effects added earlier; after effects added later', async () => {
    const { fiber: parent } = fiber('parent');
    const order: string[] = [];
    parent.add(() => order.push('parent early'));
    const child = parent.child('child');
    expect(child.name).toBe('parent/child');
    child.add(() => order.push('child 1'));
    child.add(() => order.push('child 2'));
    const grandchild = child.child('grand');
    grandchild.add(() => order.push('grandchild'));
    parent.add(() => order.push('parent late'));
    await parent.dispose();
    expect(order).toEqual(['parent late', 'grandchild', 'child 2', 'child 1', 'parent early']);
    expect(child.signal.aborted).toBe(true);
    expect(grandchild.signal.aborted).toBe(true);
  });

  it('a child disposed on its own does not run again with the parent, and the parent forgets it', async () => {
    const { fiber: parent } = fiber('parent');
    let calls = 0;
    const child = parent.child('c');
    child.add(() => calls++);
    await child.dispose();
    await parent.dispose();
    expect(calls).toBe(1);
  });
});

describe('scopes', () => {
  it('staged registrations apply only at commit, all at once, and undo in reverse on dispose', async () => {
    const { fiber: f } = fiber();
    const scope = new Scope(f, { staged: true });
    const log: string[] = [];
    const reg = (label: string) => ({
      apply: () => {
        log.push(`apply ${label}`);
        return () => log.push(`undo ${label}`);
      },
    });
    scope.register(reg('a'));
    const disposeB = scope.register(reg('b'));
    scope.register(reg('c'));
    disposeB(); // removed before commit: never applied
    expect(log).toEqual([]);
    scope.commit();
    expect(log).toEqual(['apply a', 'apply c']);
    await f.dispose();
    expect(log).toEqual(['apply a', 'apply c', 'undo c', 'undo a']);
  });

  it('a commit with a refused registration applies nothing', () => {
    const { fiber: f } = fiber();
    const scope = new Scope(f);
    const log: string[] = [];
    scope.register({ apply: () => (log.push('a'), () => log.push('undo a')) });
    let refuse = false;
    scope.register({
      validate: () => {
        if (refuse) throw new HarnessError('TAKEN', 'taken');
      },
      apply: () => (log.push('b'), () => log.push('undo b')),
    });
    refuse = true;
    expect(() => scope.commit()).toThrow(expect.objectContaining({ code: 'TAKEN' }));
    expect(log).toEqual([]);
    expect(scope.isStaged).toBe(true);
  });

  it('an apply that throws rolls back the ones already applied', () => {
    const { fiber: f } = fiber();
    const scope = new Scope(f);
    const log: string[] = [];
    scope.register({ apply: () => (log.push('a'), () => log.push('undo a')) });
    scope.register({
      apply: () => {
        throw new HarnessError('APPLY_FAILED', 'no');
      },
    });
    expect(() => scope.commit()).toThrow(expect.objectContaining({ code: 'APPLY_FAILED' }));
    expect(log).toEqual(['a', 'undo a']);
  });

  it('registering on a disposing scope is FIBER_DISPOSED and nothing is applied', async () => {
    const { fiber: f } = fiber();
    const scope = new Scope(f, { staged: false });
    const disposal = f.dispose();
    let applied = 0;
    expect(() => scope.register({ apply: () => (applied++, () => {}) })).toThrow(expect.objectContaining({ code: 'FIBER_DISPOSED' }));
    expect(applied).toBe(0);
    await disposal;
  });

  it('detach undoes and reattach re-applies, keeping the registrations', async () => {
    const { fiber: f } = fiber();
    const scope = new Scope(f, { staged: false });
    const log: string[] = [];
    scope.register({ apply: () => (log.push('apply'), () => log.push('undo')) });
    scope.detach();
    scope.reattach();
    await f.dispose();
    expect(log).toEqual(['apply', 'undo', 'apply', 'undo']);
  });
});
