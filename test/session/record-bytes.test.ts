/**
 * A batch encoded straight into bytes (runtime/session/record-bytes.ts) is exactly the UTF-8 of
 * the lines `serializeEvent` makes (`JSON.stringify`), for any data, whatever the buffer's size.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AnySessionEvent } from '../../runtime/session/events.ts';
import { eventLine, serializeEvent } from '../../runtime/session/journal.ts';
import { RecordBytes } from '../../runtime/session/record-bytes.ts';

const eventOf = (data: unknown, extra: Record<string, unknown> = {}): AnySessionEvent => ({ seq: 7, type: 'assistant/chunk', atMs: 1_764_720_000_123, data, ...extra }) as unknown as AnySessionEvent;

/** The bytes of a batch, encoded, and what `Buffer.from(serializeEvent(…))` gives for it. */
function both(events: readonly AnySessionEvent[]): { encoded: string; reference: string } {
  const encoder = new RecordBytes(eventLine);
  for (const event of events) encoder.event(event);
  const encoded = encoder.bytes().toString('hex');
  encoder.release();
  return { encoded, reference: Buffer.from(events.map(serializeEvent).join(''), 'utf8').toString('hex') };
}

const hardText = fc.oneof(
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }), // lone surrogates too
  fc.string({ unit: 'binary', minLength: 90, maxLength: 300 }), // past the char-by-char length
  fc.constantFrom('', '"', '\\', '\n\t\r\b\f', '\u0000\u001f\u007f', '\u2028\u2029', '\ud83d', '\ude00', '😀', 'é', '€', '</script>', 'plain ascii text'),
);
const number = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.maxSafeInteger(),
  fc.constantFrom(0, 1e21, 1e-7, 2 ** 30, 2 ** 30 - 1, -(2 ** 30), 999_999_999, 1_000_000_000, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, Number.MAX_VALUE, Number.MIN_VALUE, 0.1, -1.5),
);
const key = fc.oneof(hardText, fc.constantFrom('0', '1', '10', '4294967294', '4294967295', '-1', '01', 'toJSON', '__proto__'));
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, hardText, number, fc.boolean(), fc.constant(null), tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(key, tie('value'), { maxKeys: 6 }),
})).value;

describe('RecordBytes', () => {
  it('encodes any lossless JSON data exactly as serializeEvent does (key order, escapes, numbers, UTF-8)', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ data: json, atMs: number, seq: fc.nat(), ignorable: fc.boolean() }), { minLength: 1, maxLength: 8 }), (records) => {
        const events = records.map(({ data, atMs, seq, ignorable }) => eventOf(data, { atMs, seq, ...(ignorable ? { ignorable: true } : {}) }));
        const { encoded, reference } = both(events);
        expect(encoded).toBe(reference);
      }),
      { numRuns: 2000 },
    );
  });

  it('writes the usual records byte for byte: a delta, a message, a null-prototype object, a non-finite atMs', () => {
    const bare = Object.assign(Object.create(null) as object, { b: 1, a: [true, false, null] });
    const cases = [
      eventOf({ turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'Hello, wörld 😀' } }, { ignorable: true }),
      eventOf({ turn: 2, message: { role: 'user', content: [{ type: 'text', text: 'say "hi"\n' }] } }, { type: 'user/message' }),
      eventOf(bare),
      eventOf({ a: 1 }, { atMs: Number.NaN }),
      eventOf({ a: 1 }, { atMs: 1.5 }),
      eventOf({ a: -0, b: -12, c: 1e300 }),
    ];
    const { encoded, reference } = both(cases);
    expect(encoded).toBe(reference);
    const encoder = new RecordBytes(eventLine);
    encoder.event(cases[0]!);
    expect(encoder.bytes().toString('utf8')).toBe(
      '{"seq":7,"type":"assistant/chunk","atMs":1764720000123,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"Hello, wörld 😀"}},"ignorable":true}\n',
    );
    encoder.release();
  });

  it('gives data it cannot vouch for to JSON.stringify, whole record: undefined, NaN, holes, class instances, toJSON, inherited keys, depth past 64', () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 80; i++) deep = [deep];
    const inherited = Object.assign(Object.create({ extra: 1 }) as object, { own: 2 });
    const cases = [
      { a: undefined, b: 1 },
      [1, undefined, () => 1],
      // biome-ignore lint/suspicious/noSparseArray: a hole is what this case is about
      [1, , 3],
      { n: Number.NaN, i: Number.POSITIVE_INFINITY },
      { when: new Date(0) },
      { wrapped: Object.assign(Object.create({ toJSON: () => 'from toJSON' }) as object, { x: 1 }) },
      { own: { toJSON: () => ({ replaced: true }) } },
      { own: { toJSON: 'not a function' } },
      inherited,
      deep,
      { text: new String('boxed') },
    ];
    for (const data of cases) {
      const { encoded, reference } = both([eventOf({ before: 'x' }), eventOf(data), eventOf({ after: 'y' })]);
      expect(encoded).toBe(reference);
    }
  });

  it('grows past its buffer and reuses pooled buffers without stale bytes: a batch of 5 MB, a 1 MB string, then a small batch', () => {
    const big = 'x'.repeat(1024 * 1024);
    const many = Array.from({ length: 20_000 }, (_, i) => eventOf({ turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: `word ${i} ✓` } }, { seq: i + 1 }));
    for (const batch of [many, [eventOf({ text: big }), eventOf({ text: `${big}\n` })], [eventOf({ small: true })]]) {
      const { encoded, reference } = both(batch);
      expect(encoded.length).toBe(reference.length);
      expect(encoded === reference).toBe(true);
    }
  });

  it('has room for the closing brackets wherever the buffer fills: 64 levels of nesting across its end', () => {
    const nested = (depth: number, text: string): unknown => (depth === 0 ? text : depth % 2 === 0 ? [nested(depth - 1, text)] : { k: nested(depth - 1, text) });
    const batch = Array.from({ length: 3000 }, (_, i) => eventOf(nested(63, (i % 2 === 0 ? '\u0001' : 'é').repeat(i % 97)), { seq: i + 1 }));
    batch.push(eventOf(nested(63, ''), { seq: 3001 }), eventOf(JSON.parse('['.repeat(63) + ']'.repeat(63)), { seq: 3002 }));
    const { encoded, reference } = both(batch);
    expect(encoded === reference).toBe(true);
    // Every place the end of the buffer can fall in the worst case: escapes that use all of a
    // string's room, then 63 closing brackets.
    const worst = eventOf(nested(63, '\u0001'.repeat(20)));
    const expected = Buffer.from(serializeEvent(worst), 'utf8').toString('hex');
    for (let size = 1; size <= 1200; size++) {
      const encoder = new RecordBytes(eventLine, size);
      encoder.event(worst);
      expect(encoder.bytes().toString('hex'), `a ${size}-byte buffer`).toBe(expected);
    }
  });

  it('writes raw lines as they are, each with its newline', () => {
    const encoder = new RecordBytes(eventLine);
    encoder.raw('{"seq":1,"type":"x","atMs":1,"data":{"kept":"as é is"}}');
    encoder.event(eventOf({ a: 1 }, { seq: 2 }));
    encoder.raw('{"seq":3}');
    expect(encoder.bytes().toString('utf8')).toBe(`{"seq":1,"type":"x","atMs":1,"data":{"kept":"as é is"}}\n${serializeEvent(eventOf({ a: 1 }, { seq: 2 }))}{"seq":3}\n`);
    encoder.release();
  });
});
