import { describe, expect, it } from 'vitest';
import { HarnessError } from '../../runtime/index.ts';
import { assertLosslessJson, isLosslessJson } from '../../runtime/internal.ts';

function rejection(value: unknown): { code: string; message: string; path: unknown } {
  try {
    assertLosslessJson(value, 'data');
  } catch (error) {
    if (!HarnessError.is(error)) throw error;
    return { code: error.code, message: error.message, path: error.failure.path };
  }
  throw new Error('expected a rejection');
}

describe('lossless JSON validation', () => {
  it('accepts plain JSON data, shared (non-cyclic) references and null-prototype objects', () => {
    const shared = { type: 'text', text: 'hi' };
    const bare = Object.assign(Object.create(null), { a: 1 });
    expect(() => assertLosslessJson({ a: [1, 'x', true, null, { b: 0, c: -1.5e300 }], d: [shared, shared], bare })).not.toThrow();
    expect(isLosslessJson('text')).toBe(true);
    expect(isLosslessJson(0)).toBe(true);
  });

  it.each([
    ['undefined in an object', { message: { content: [{ type: 'text', text: 'a' }, {}, { type: 'text', text: undefined }] } }, 'data.message.content[2].text', /undefined/],
    ['undefined in an array', { list: [1, undefined] }, 'data.list[1]', /undefined/],
    // biome-ignore lint/suspicious/noSparseArray: the hole is what this case tests
    ['a hole in an array', { list: [1, , 3] }, 'data.list[1]', /undefined/],
    ['NaN', { usage: { inputTokens: Number.NaN } }, 'data.usage.inputTokens', /NaN/],
    ['Infinity', { n: Infinity }, 'data.n', /Infinity/],
    ['-Infinity', { n: -Infinity }, 'data.n', /-Infinity/],
    ['-0', { n: [0, -0] }, 'data.n[1]', /-0/],
    ['a BigInt', { n: 10n }, 'data.n', /BigInt/],
    ['a function', { f: () => 1 }, 'data.f', /function/],
    ['a symbol', { s: Symbol('x') }, 'data.s', /symbol/],
    ['a Date', { at: new Date(0) }, 'data.at', /Date/],
    ['a Map', { m: new Map() }, 'data.m', /Map/],
    ['an Error', { e: new Error('x') }, 'data.e', /Error/],
    ['a Uint8Array', { bytes: new Uint8Array(2) }, 'data.bytes', /Uint8Array/],
    ['a class instance', { x: new (class Point {})() }, 'data.x', /Point/],
    ['an odd key', { 'odd key': { n: NaN } }, 'data["odd key"].n', /NaN/],
  ])('rejects %s with the path', (_name, value, path, found) => {
    const error = rejection(value);
    expect(error.code).toBe('INVALID_EVENT_DATA');
    expect(error.path).toBe(path);
    expect(error.message).toContain(path);
    expect(error.message).toMatch(found);
  });

  it('rejects a cycle, naming where it closes', () => {
    const message: Record<string, unknown> = { content: [] };
    (message.content as unknown[]).push({ parent: message });
    const error = rejection({ message });
    expect(error.path).toBe('data.message.content[0].parent');
    expect(error.message).toMatch(/cycle/);
  });

  it('rejects a bad root', () => {
    expect(rejection(undefined).path).toBe('data');
    expect(rejection(new Date()).path).toBe('data');
  });

  it('walks deep data iteratively (no stack overflow)', () => {
    let deep: unknown = { leaf: true };
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(() => assertLosslessJson(deep)).not.toThrow();
  });
});
