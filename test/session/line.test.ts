/**
 * A record's line is the same bytes whichever way it is written: the delta fast path
 * (runtime/session/line.ts) against `JSON.stringify` on the same event.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventLine, serializeEvent } from '../../runtime/session/journal.ts';
import type { AnySessionEvent } from '../../runtime/session/events.ts';

/** The line as the journal has always written it. */
function reference(event: AnySessionEvent): string {
  return `{"seq":${event.seq},"type":${JSON.stringify(event.type)},"atMs":${JSON.stringify(event.atMs)},"data":${JSON.stringify(event.data)}${event.ignorable === true ? ',"ignorable":true' : ''}}`;
}

const chunkEvent = (data: unknown, extra: Partial<AnySessionEvent> = {}): AnySessionEvent =>
  Object.freeze({ seq: 7, type: 'assistant/chunk', atMs: 1_764_720_000_123, data, ...extra }) as unknown as AnySessionEvent;

const hardText = fc.oneof(
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }), // lone surrogates too
  fc.constantFrom('', '"', '\\', '\n\t\r\b\f', '\u0000\u001f', '\u2028\u2029', '\ud83d', '\ude00', '😀', '</script>', 'plain ascii text'),
);
const number = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(-0, 0, 1e21, 1e-7, 2 ** 53, Number.MAX_VALUE, Number.MIN_VALUE));

describe('eventLine', () => {
  it('writes a delta record exactly as JSON.stringify does', () => {
    const chunk = fc.record(
      { type: fc.oneof(fc.constantFrom('text-delta', 'reasoning-delta', 'tool-call-delta'), hardText), index: number, text: hardText, id: hardText, name: hardText, arguments: hardText },
      { requiredKeys: [] },
    );
    const data = fc.record({ turn: number, step: number, chunk }, { requiredKeys: [] });
    fc.assert(
      fc.property(data, fc.shuffledSubarray(['turn', 'step', 'chunk'] as const), fc.boolean(), (value, order, ignorable) => {
        // Key order varies: the line follows the object's own order, as JSON.stringify does.
        const ordered: Record<string, unknown> = {};
        for (const key of order) if (key in value) ordered[key] = value[key];
        const event = chunkEvent(ordered, ignorable ? { ignorable: true } : {});
        expect(eventLine(event)).toBe(reference(event));
      }),
      { numRuns: 3000 },
    );
  });

  it('gives anything else to JSON.stringify: other keys, other value types, nested values, inherited keys', () => {
    const inherited = Object.create({ extra: 1 }) as Record<string, unknown>;
    inherited.turn = 1;
    inherited.chunk = { type: 'text-delta', index: 0, text: 'x' };
    const cases: unknown[] = [
      { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'x', refusal: 'no' } },
      { turn: 1, step: 1, chunk: { type: 'block-end', index: 0, block: { type: 'text', text: 'hi' } } },
      { turn: 1, step: 1, chunk: { type: 'usage', usage: { inputTokens: 3 } } },
      { turn: 1, step: 1, chunk: { type: 'text-delta', index: '0', text: 'x' } },
      { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: null } },
      { turn: '1', step: 1, chunk: { type: 'text-delta', index: 0, text: 'x' } },
      { turn: 1, step: 1, chunk: [1, 2] },
      { turn: 1, step: 1, chunk: null },
      { turn: 1, step: 1, note: 'x' },
      { 0: 'index key', turn: 1 },
      { turn: Number.NaN, step: Number.POSITIVE_INFINITY, chunk: { type: 'text-delta', index: Number.NaN, text: 'x' } },
      {},
      [],
      [{ turn: 1 }],
      new Date(0),
      Object.assign(Object.create({ toJSON: () => 'from toJSON' }), { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'x' } }),
      { turn: 1, step: 1, chunk: Object.assign(Object.create({ toJSON: () => 'chunk toJSON' }), { type: 'text-delta', index: 0, text: 'x' }) },
      'a string',
      inherited,
    ];
    for (const data of cases) {
      const event = chunkEvent(data);
      expect(eventLine(event)).toBe(reference(event));
    }
    // The extra inherited key is not written (JSON.stringify takes own keys only).
    expect(eventLine(chunkEvent(inherited))).toBe('{"seq":7,"type":"assistant/chunk","atMs":1764720000123,"data":{"turn":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}}');
  });

  it('writes other records with JSON.stringify, a non-finite atMs as null, and serializeEvent adds the newline', () => {
    const message = Object.freeze({
      seq: 3,
      type: 'user/message',
      atMs: Number.NaN,
      data: { turn: 1, message: { role: 'user', content: [{ type: 'text', text: 'hi "you"' }] } },
    }) as unknown as AnySessionEvent;
    expect(eventLine(message)).toBe('{"seq":3,"type":"user/message","atMs":null,"data":{"turn":1,"message":{"role":"user","content":[{"type":"text","text":"hi \\"you\\""}]}}}');
    expect(serializeEvent(message)).toBe(`${eventLine(message)}\n`);
    const delta = chunkEvent({ turn: 2, step: 3, chunk: { type: 'text-delta', index: 1, text: 'a\u0000b' } }, { ignorable: true });
    expect(eventLine(delta)).toBe('{"seq":7,"type":"assistant/chunk","atMs":1764720000123,"data":{"turn":2,"step":3,"chunk":{"type":"text-delta","index":1,"text":"a\\u0000b"}},"ignorable":true}');
  });
});
