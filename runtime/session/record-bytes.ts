/**
 * Record lines encoded straight into bytes (DESIGN "The hot path"; issue 22's write path): a
 * batch's lines are written as UTF-8 into one pooled Buffer, the bytes `lease.writeBytes` takes.
 *
 * The bytes are exactly `Buffer.from(serializeEvent(event), 'utf8')` for every event — the same
 * key order (`seq, type, atMs, data, ignorable`; data in its own property order, integer-like keys
 * first, as `JSON.stringify` orders them), the same escapes (`\"`, `\\`, `\b\f\n\r\t`, other
 * controls and lone surrogates as lowercase `\uXXXX`), the same numbers (`String(n)`). What it
 * saves is the strings: on Node 20 `JSON.stringify` of a chunk record's data allocates ~160 B and
 * reading it back ~100 B more (its result is a rope, flattened on first read), the line's template
 * literal ~180 B of ropes, and `Buffer.from(joinLines(…))` flattens the batch once more — ~630 B
 * per delta record in all, where this allocates nothing per record (bench/stream/heap-profile.ts).
 *
 * Data the walk cannot vouch for — an object that is not plain, a `toJSON` function, a value
 * `JSON.stringify` would drop or change (`undefined`, a function, `NaN`), more than 64 levels —
 * is written by `JSON.stringify` instead (the whole record, same bytes): appended data is already
 * lossless JSON (`json.ts`), so that only happens to data that came in some other way.
 */
import type { AnySessionEvent } from './events.ts';

/** A line of `JSON.stringify` output, for the records the walk gives up on. */
export type LineOf = (event: AnySessionEvent) => string;

/** Past this depth the whole record goes to `JSON.stringify` (no deep recursion on the hot path). */
const MAX_DEPTH = 64;
/** Strings longer than this are checked by a regular expression and copied natively, not char by char. */
const LONG_STRING = 96;
/** What in a string JSON.stringify escapes (and surrogates, which it may): long strings that have none are copied as they are. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what JSON escapes
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/;
/** A pooled buffer's first size, and the largest one the pool keeps. */
const INITIAL_BYTES = 64 * 1024;
const POOLED_MAX_BYTES = 1024 * 1024;
const POOL_SIZE = 8;
/**
 * Every `ensure` leaves this much more room: enough for the closing brackets (at most MAX_DEPTH)
 * and the one separator a value can be followed by before the next `ensure`, so punctuation is
 * written without a check of its own.
 */
const SLACK = MAX_DEPTH + 8;

const HEX = '0123456789abcdef';
/** The own-key test in `object()`'s for-in (V8 answers it from the enum cache; `Object.hasOwn` it does not: ~12% of a delta record's encoding). */
const hasOwn = Object.prototype.hasOwnProperty;
/** The escape of each byte below 0x20 and of `"` and `\`, as JSON.stringify writes it. */
const ESCAPES: (string | undefined)[] = new Array(0x60);
for (let c = 0; c < 0x20; c++) ESCAPES[c] = `\\u00${HEX[c >> 4]}${HEX[c & 15]}`;
Object.assign(ESCAPES, { 8: '\\b', 9: '\\t', 10: '\\n', 12: '\\f', 13: '\\r', 34: '\\"', 92: '\\\\' });

const pool: Buffer[] = [];
const EMPTY = Buffer.alloc(0);
const typePrefixes = new Map<string, Buffer>();
const SEQ = Buffer.from('{"seq":', 'latin1');
const DATA = Buffer.from(',"data":', 'latin1');
const END = Buffer.from('}\n', 'latin1');
const END_IGNORABLE = Buffer.from(',"ignorable":true}\n', 'latin1');

/**
 * Encodes one batch of record lines into a pooled buffer: `event`/`raw` per line, then `bytes()`
 * for the batch, and `release()` once the write that took them has settled (the bytes are reused).
 */
export class RecordBytes {
  private buffer: Buffer;
  private offset = 0;

  /** @param initialBytes a fresh buffer of this size instead of a pooled one (tests: where it fills). */
  constructor(
    private readonly lineOf: LineOf,
    initialBytes?: number,
  ) {
    this.buffer = initialBytes === undefined ? (pool.pop() ?? Buffer.allocUnsafeSlow(INITIAL_BYTES)) : Buffer.allocUnsafeSlow(initialBytes);
  }

  /** Appends an event's line and its `\n`. */
  event(event: AnySessionEvent): void {
    const start = this.offset;
    let prefix = typePrefixes.get(event.type);
    if (prefix === undefined) {
      prefix = Buffer.from(`,"type":${JSON.stringify(event.type)},"atMs":`, 'utf8');
      if (typePrefixes.size < 4096) typePrefixes.set(event.type, prefix);
    }
    // One check for the record's head: seq and atMs take at most 32 bytes each.
    this.ensure(SEQ.length + prefix.length + DATA.length + 64);
    this.copy(SEQ);
    this.number(event.seq);
    this.copy(prefix);
    if (Number.isFinite(event.atMs)) this.number(event.atMs);
    else this.ascii('null');
    this.copy(DATA);
    if (!this.value(event.data, 0)) {
      this.offset = start;
      this.raw(this.lineOf(event));
      return;
    }
    const end = event.ignorable === true ? END_IGNORABLE : END;
    this.ensure(end.length);
    this.copy(end);
  }

  /** Appends a line as it is (no `\n` in it) and its `\n`. */
  raw(line: string): void {
    this.ensure(line.length * 3 + 1);
    this.offset += this.buffer.write(line, this.offset, 'utf8');
    this.buffer[this.offset++] = 10;
  }

  /** The batch so far: a view of the pooled buffer, valid until `release()`. */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.offset);
  }

  /** Gives the buffer back to the pool (the bytes must no longer be in use). */
  release(): void {
    if (this.buffer.length <= POOLED_MAX_BYTES && pool.length < POOL_SIZE) pool.push(this.buffer);
    this.buffer = EMPTY;
    this.offset = 0;
  }

  /** Writes a JSON value; false when it is one the walk does not vouch for (nothing is then valid). */
  private value(value: unknown, depth: number): boolean {
    switch (typeof value) {
      case 'string':
        this.string(value);
        return true;
      case 'number':
        if (!Number.isFinite(value)) return false;
        this.ensure(32);
        this.number(value);
        return true;
      case 'boolean':
        this.ensure(5);
        this.ascii(value ? 'true' : 'false');
        return true;
      case 'object':
        if (value === null) {
          this.ensure(4);
          this.ascii('null');
          return true;
        }
        if (depth >= MAX_DEPTH) return false;
        return Array.isArray(value) ? this.array(value, depth + 1) : this.object(value, depth + 1);
      default:
        return false;
    }
  }

  private array(array: readonly unknown[], depth: number): boolean {
    if (typeof (array as { toJSON?: unknown }).toJSON === 'function') return false;
    this.ensure(1);
    this.buffer[this.offset++] = 0x5b; // [
    for (let i = 0; i < array.length; i++) {
      if (i > 0) this.buffer[this.offset++] = 0x2c; // ,
      if (!this.value(array[i], depth)) return false;
    }
    this.buffer[this.offset++] = 0x5d; // ]
    return true;
  }

  private object(object: object, depth: number): boolean {
    const proto = Object.getPrototypeOf(object);
    if ((proto !== Object.prototype && proto !== null) || typeof (object as { toJSON?: unknown }).toJSON === 'function') return false;
    this.ensure(1);
    this.buffer[this.offset++] = 0x7b; // {
    let first = true;
    // for-in gives own keys in JSON.stringify's order (integer-like first), then inherited ones.
    for (const key in object) {
      if (!hasOwn.call(object, key)) continue;
      if (!first) this.buffer[this.offset++] = 0x2c; // ,
      first = false;
      this.string(key);
      this.buffer[this.offset++] = 0x3a; // :
      if (!this.value((object as Record<string, unknown>)[key], depth)) return false;
    }
    this.buffer[this.offset++] = 0x7d; // }
    return true;
  }

  /** A JSON string literal, as JSON.stringify writes it, in UTF-8. */
  private string(text: string): void {
    const length = text.length;
    if (length > LONG_STRING) {
      // Natively: as it is when nothing needs escaping, else JSON.stringify's own literal (ASCII
      // escapes, well-formed pairs) — one string allocated, still no rope.
      const literal = NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : undefined;
      if (literal === undefined) {
        this.ensure(length * 3 + 2);
        this.buffer[this.offset++] = 0x22;
        this.offset += this.buffer.write(text, this.offset, 'utf8');
        this.buffer[this.offset++] = 0x22;
      } else {
        this.ensure(literal.length * 3);
        this.offset += this.buffer.write(literal, this.offset, 'utf8');
      }
      return;
    }
    this.ensure(length * 6 + 2);
    const buffer = this.buffer;
    let at = this.offset;
    buffer[at++] = 0x22;
    for (let i = 0; i < length; i++) {
      let c = text.charCodeAt(i);
      if (c >= 0x20 && c < 0x80 && c !== 0x22 && c !== 0x5c) buffer[at++] = c;
      else if (c < 0x80) {
        const escaped = ESCAPES[c]!;
        for (let j = 0; j < escaped.length; j++) buffer[at++] = escaped.charCodeAt(j);
      } else if (c < 0x800) {
        buffer[at++] = 0xc0 | (c >> 6);
        buffer[at++] = 0x80 | (c & 0x3f);
      } else if (c < 0xd800 || c >= 0xe000) {
        buffer[at++] = 0xe0 | (c >> 12);
        buffer[at++] = 0x80 | ((c >> 6) & 0x3f);
        buffer[at++] = 0x80 | (c & 0x3f);
      } else {
        const low = c < 0xdc00 && i + 1 < length ? text.charCodeAt(i + 1) : 0;
        if (low >= 0xdc00 && low < 0xe000) {
          i++;
          c = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
          buffer[at++] = 0xf0 | (c >> 18);
          buffer[at++] = 0x80 | ((c >> 12) & 0x3f);
          buffer[at++] = 0x80 | ((c >> 6) & 0x3f);
          buffer[at++] = 0x80 | (c & 0x3f);
        } else {
          // A lone surrogate: JSON.stringify writes it as an escape (well-formed JSON.stringify).
          buffer[at++] = 0x5c;
          buffer[at++] = 0x75;
          buffer[at++] = HEX.charCodeAt(c >> 12);
          buffer[at++] = HEX.charCodeAt((c >> 8) & 15);
          buffer[at++] = HEX.charCodeAt((c >> 4) & 15);
          buffer[at++] = HEX.charCodeAt(c & 15);
        }
      }
    }
    buffer[at++] = 0x22;
    this.offset = at;
  }

  /** A finite number as `String(n)` writes it (room for 32 bytes already ensured: `String` writes at most 24). */
  private number(n: number): void {
    if (n >= 0 && n < 0x40000000 && (n | 0) === n) {
      this.smallInteger(n);
      return;
    }
    if (Number.isSafeInteger(n)) {
      // Two halves below 2^30 each: digit arithmetic on small integers allocates no heap numbers.
      let rest = n;
      if (rest < 0) {
        this.buffer[this.offset++] = 0x2d; // -
        rest = -rest;
      }
      if (rest < 0x40000000) {
        this.smallInteger(rest);
        return;
      }
      // A safe integer is below 2^53, so its high half is below 2^24.
      const high = Math.floor(rest / 1e9);
      const low = rest - high * 1e9;
      this.smallInteger(high);
      let at = this.offset + 8;
      for (let value = low; at >= this.offset; at--) {
        const tenth = (value / 10) | 0;
        this.buffer[at] = 0x30 + value - tenth * 10;
        value = tenth;
      }
      this.offset += 9;
      return;
    }
    this.ascii(String(n)); // fractions, exponents: what String writes (−0 is "0")
  }

  /** 0 ≤ n < 2^30. */
  private smallInteger(n: number): void {
    let digits = 1;
    for (let rest = n; rest >= 10; rest = (rest / 10) | 0) digits++;
    let at = this.offset + digits;
    this.offset = at;
    let value = n;
    while (value >= 10) {
      const tenth = (value / 10) | 0;
      this.buffer[--at] = 0x30 + value - tenth * 10;
      value = tenth;
    }
    this.buffer[--at] = 0x30 + value;
  }

  /** ASCII text (room already ensured). */
  private ascii(text: string): void {
    for (let i = 0; i < text.length; i++) this.buffer[this.offset++] = text.charCodeAt(i);
  }

  private copy(bytes: Buffer): void {
    const buffer = this.buffer;
    let at = this.offset;
    for (let i = 0; i < bytes.length; i++) buffer[at++] = bytes[i]!;
    this.offset = at;
  }

  /** Room for `byteCount` more bytes and SLACK (the buffer doubles, keeping what is written). */
  private ensure(byteCount: number): void {
    if (this.buffer.length - this.offset < byteCount + SLACK) this.grow(byteCount + SLACK);
  }

  private grow(needed: number): void {
    let size = Math.max(this.buffer.length * 2, INITIAL_BYTES);
    while (size - this.offset < needed) size *= 2;
    const grown = Buffer.allocUnsafeSlow(size);
    this.buffer.copy(grown, 0, 0, this.offset);
    this.buffer = grown;
  }
}
