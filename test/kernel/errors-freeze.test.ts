import { describe, expect, it } from 'vitest';
import { getErrorInfo, HarnessError, toFailure, toJsonSafe } from '../../runtime/kernel/errors.ts';
import { deepFreeze, isPlainData } from '../../runtime/kernel/freeze.ts';

describe('HarnessError', () => {
  it('has a stable code, a message, the cause, and a frozen JSON-safe failure', () => {
    const cause = new TypeError('socket hang up');
    const error = new HarnessError('PROVIDER_UNAVAILABLE', 'The provider did not answer.', {
      cause,
      details: {
        status: 503,
        providerRetryAfterMs: 1500,
        nested: { list: [1, undefined, Number.NaN, -0], when: undefined, big: 10n, err: new Error('inner') },
      },
      isRetryable: true,
    });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('HarnessError');
    expect(error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(error.message).toBe('The provider did not answer.');
    expect(error.cause).toBe(cause);
    expect(error.isRetryable).toBe(true);
    expect(error.failure).toEqual({
      status: 503,
      providerRetryAfterMs: 1500,
      nested: { list: [1, null, null, 0], big: '10', err: { name: 'Error', message: 'inner' } },
      code: 'PROVIDER_UNAVAILABLE',
      message: 'The provider did not answer.',
    });
    expect(Object.isFrozen(error.failure)).toBe(true);
    expect(Object.isFrozen(error.failure.nested)).toBe(true);
    expect(Object.isFrozen((error.failure.nested as { list: unknown[] }).list)).toBe(true);
    expect(JSON.parse(JSON.stringify(error.failure))).toEqual(error.failure);
    expect(() => {
      (error.failure as { code: string }).code = 'CHANGED';
    }).toThrow(TypeError);
    expect(error.failure.code).toBe('PROVIDER_UNAVAILABLE');
  });

  it('details cannot override code and message; issues are carried and frozen', () => {
    const error = new HarnessError('INVALID_INPUT', 'bad', {
      details: { code: 'SPOOFED', message: 'spoofed' },
      issues: [{ code: 'TOO_SMALL', message: 'must be ≥ 1', path: ['a', 0] }],
    });
    expect(error.failure.code).toBe('INVALID_INPUT');
    expect(error.failure.message).toBe('bad');
    expect(error.failure.issues).toEqual([{ code: 'TOO_SMALL', message: 'must be ≥ 1', path: ['a', 0] }]);
    expect(Object.isFrozen(error.issues)).toBe(true);
    expect(Object.isFrozen(error.issues[0])).toBe(true);
  });

  it('a cyclic detail is cut, not a crash', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const error = new HarnessError('X_FAILED', 'x', { details: { cyclic } });
    expect(error.failure.cyclic).toEqual({ a: 1, self: '[cycle]' });
    expect(() => JSON.stringify(error.failure)).not.toThrow();
  });

  it('HarnessError.is works across copies of the module (brand by Symbol.for), not by shape', () => {
    const foreign = Object.assign(new Error('x'), { code: 'X' });
    Object.defineProperty(foreign, Symbol.for('harness.error'), { value: true });
    expect(HarnessError.is(new HarnessError('A', 'a'))).toBe(true);
    expect(HarnessError.is(foreign)).toBe(true);
    expect(HarnessError.is(Object.assign(new Error('x'), { code: 'X', failure: {} }))).toBe(false);
    expect(HarnessError.is(null)).toBe(false);
    expect(HarnessError.is('A')).toBe(false);
  });

  it('fromFailure round-trips a journaled failure', () => {
    const original = new HarnessError('RATE_LIMITED', 'slow down', { details: { status: 429 }, issues: [{ code: 'I', message: 'm' }] });
    const journaled = JSON.parse(JSON.stringify(original.failure));
    const rebuilt = HarnessError.fromFailure(journaled);
    expect(rebuilt.code).toBe('RATE_LIMITED');
    expect(rebuilt.message).toBe('slow down');
    expect(rebuilt.failure).toEqual(original.failure);
  });

  it('toFailure: a HarnessError keeps its own; anything else becomes the fallback code', () => {
    const error = new HarnessError('A_B', 'ab');
    expect(toFailure(error)).toBe(error.failure);
    expect(toFailure(new Error('plain'), 'TOOL_FAILED')).toEqual({ code: 'TOOL_FAILED', message: 'plain' });
    expect(toFailure('text')).toEqual({ code: 'UNKNOWN', message: 'text' });
    expect(toFailure({ weird: true })).toEqual({ code: 'UNKNOWN', message: '{"weird":true}' });
    expect(Object.isFrozen(toFailure(new Error('plain')))).toBe(true);
  });

  it('toJsonSafe copies a value shared by two branches twice (only a true cycle is cut) and keeps key order', () => {
    const shared = { x: 1 };
    const result = toJsonSafe({ a: shared, b: 2, c: [shared, undefined, () => 1], d: new Date(0), e: new Error('e') });
    expect(result).toEqual({ a: { x: 1 }, b: 2, c: [{ x: 1 }, null, null], d: '1970-01-01T00:00:00.000Z', e: { name: 'Error', message: 'e' } });
    expect(Object.keys(result as object)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(toJsonSafe(new TypeError('top'))).toEqual({ name: 'TypeError', message: 'top' });
    expect(toJsonSafe(undefined)).toBeUndefined();
    expect(toJsonSafe(Symbol('s'))).toBeUndefined();
  });

  it('toJsonSafe handles deep nesting without a stack overflow', () => {
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 100_000; i++) {
      const next = {};
      deep.child = next;
      deep = next;
    }
    expect(() => toJsonSafe(root)).not.toThrow();
    const error = new HarnessError('DEEP_FAILED', 'deep', { details: { body: root } });
    let depth = 0;
    let node: unknown = error.failure.body;
    while ((node as { child?: unknown }).child !== undefined) {
      node = (node as { child: unknown }).child;
      depth++;
    }
    expect(depth).toBe(100_000);
  });
});

describe('getErrorInfo', () => {
  it('walks the cause chain: codes outermost first, first issues and retryability found', () => {
    const root = Object.assign(new Error('ECONNRESET'), { code: 'ECONNRESET' });
    const middle = new HarnessError('PROVIDER_UNAVAILABLE', 'down', { cause: root, isRetryable: true, issues: [{ code: 'I1', message: 'first' }] });
    const outer = new HarnessError('PLUGIN_SETUP_FAILED', 'setup failed', { cause: middle });
    const info = getErrorInfo(outer);
    expect(info).toEqual({
      code: 'PLUGIN_SETUP_FAILED',
      codes: ['PLUGIN_SETUP_FAILED', 'PROVIDER_UNAVAILABLE', 'ECONNRESET'],
      issues: [{ code: 'I1', message: 'first' }],
      isRetryable: true,
      cause: outer,
    });
  });

  it('ignores codes that are not UPPER_SNAKE, reads an `errors` array as issues, and stops at a cyclic cause', () => {
    const a: Record<string, unknown> = { code: 'invalid_request', errors: [{ code: 'REQUIRED', message: 'name is required', path: ['name'] }] };
    const b: Record<string, unknown> = { code: 'B_FAILED', cause: a };
    a.cause = b;
    const info = getErrorInfo(b);
    expect(info.codes).toEqual(['B_FAILED']);
    expect(info.issues).toEqual([{ code: 'REQUIRED', message: 'name is required', path: ['name'] }]);
    expect('isRetryable' in info).toBe(false);
  });

  it('a non-error value is UNKNOWN, with the value as cause', () => {
    for (const value of ['boom', 42, undefined, null, { nothing: true }]) {
      const info = getErrorInfo(value);
      expect(info.code).toBe('UNKNOWN');
      expect(info.codes).toEqual(['UNKNOWN']);
      expect(info.issues).toEqual([]);
      expect(info.cause).toBe(value);
    }
  });
});

describe('deepFreeze', () => {
  it('freezes plain objects and arrays all the way down and returns the same value', () => {
    const value = { a: { b: [1, { c: 2 }] }, d: Object.assign(Object.create(null), { e: { f: 1 } }) };
    expect(deepFreeze(value)).toBe(value);
    expect(Object.isFrozen(value)).toBe(true);
    expect(Object.isFrozen(value.a)).toBe(true);
    expect(Object.isFrozen(value.a.b)).toBe(true);
    expect(Object.isFrozen(value.a.b[1])).toBe(true);
    expect(Object.isFrozen(value.d)).toBe(true);
    expect(Object.isFrozen(value.d.e)).toBe(true);
  });

  it('is iterative: a 100,000-deep object and array freeze without a stack overflow', () => {
    const root: Record<string, unknown> = {};
    let node = root;
    for (let i = 0; i < 100_000; i++) {
      const next: Record<string, unknown> = {};
      node.child = next;
      node = next;
    }
    expect(() => deepFreeze(root)).not.toThrow();
    expect(Object.isFrozen(node)).toBe(true);

    const arrayRoot: unknown[] = [];
    let arrayNode = arrayRoot;
    for (let i = 0; i < 100_000; i++) {
      const next: unknown[] = [];
      arrayNode.push(next);
      arrayNode = next;
    }
    deepFreeze(arrayRoot);
    expect(Object.isFrozen(arrayNode)).toBe(true);
  });

  it('is cycle-safe', () => {
    const a: Record<string, unknown> = { name: 'a' };
    const b: Record<string, unknown> = { name: 'b', a };
    a.b = b;
    a.self = a;
    const list: unknown[] = [a];
    list.push(list);
    expect(deepFreeze(list)).toBe(list);
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(b)).toBe(true);
    expect(Object.isFrozen(list)).toBe(true);
  });

  it('walks a frozen root (a frozen shell over unfrozen data, e.g. Object.freeze({ ...message })) but not a frozen child', () => {
    const inner = { deep: { x: 1 } };
    const root = Object.freeze({ inner, again: inner });
    deepFreeze(root);
    expect(Object.isFrozen(inner)).toBe(true);
    expect(Object.isFrozen(inner.deep)).toBe(true);
    const shallow = { y: 1 };
    const frozenChild = Object.freeze({ shallow });
    deepFreeze({ frozenChild });
    // An already frozen object is taken as frozen deeply (all the runtime freezes, it freezes deeply).
    expect(Object.isFrozen(shallow)).toBe(false);
  });

  it('leaves an AbortSignal, class instances, Maps and typed arrays unfrozen, and does not descend into them', () => {
    class Client {
      config = { retries: 0 };
      send() {
        return this.config.retries;
      }
    }
    const controller = new AbortController();
    const client = new Client();
    const map = new Map([['k', { v: 1 }]]);
    const bytes = new Uint8Array([1, 2]);
    const value = { signal: controller.signal, client, map, bytes, plain: { x: 1 } };
    deepFreeze(value);
    expect(Object.isFrozen(value)).toBe(true);
    expect(Object.isFrozen(value.plain)).toBe(true);
    expect(Object.isFrozen(controller.signal)).toBe(false);
    expect(Object.isFrozen(client)).toBe(false);
    expect(Object.isFrozen(client.config)).toBe(false);
    expect(Object.isFrozen(map)).toBe(false);
    expect(Object.isFrozen(map.get('k'))).toBe(false);
    expect(Object.isFrozen(bytes)).toBe(false);
    // The signal still works.
    controller.abort();
    expect(value.signal.aborted).toBe(true);
    // deepFreeze of a bare signal or instance returns it untouched.
    const other = new AbortController().signal;
    expect(deepFreeze(other)).toBe(other);
    expect(Object.isFrozen(other)).toBe(false);
  });

  it('primitives pass through; isPlainData tells plain data apart', () => {
    expect(deepFreeze(1)).toBe(1);
    expect(deepFreeze('s')).toBe('s');
    expect(deepFreeze(null)).toBe(null);
    expect(deepFreeze(undefined)).toBe(undefined);
    expect(isPlainData({})).toBe(true);
    expect(isPlainData(Object.create(null))).toBe(true);
    expect(isPlainData([])).toBe(true);
    expect(isPlainData(new Date())).toBe(false);
    expect(isPlainData(new AbortController().signal)).toBe(false);
  });
});
