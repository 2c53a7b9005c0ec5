/**
 * `SecretRedactor.redactValue` — what every journaled record goes through: a value without a known
 * secret comes back as the same object (the check allocates nothing), and a secret is masked
 * wherever it is: in a key, deeper than the check's depth, past its node budget, at every place a
 * shared value is reached, and where a cycle leads to it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SecretRedactor } from '../../runtime/index.ts';

const KEY = 'sk-live-value-SENTINEL-42';
const MASK = '[redacted TEST_KEY]';

function redactor(): SecretRedactor {
  const r = new SecretRedactor();
  r.add(KEY, 'TEST_KEY');
  r.add('pa"ss\\word-42', 'TEST_PASSWORD');
  return r;
}

function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { next: value } : [value];
  return value;
}

describe('SecretRedactor.redactValue', () => {
  it('returns the same object when no string or key holds a secret, however large', () => {
    const r = redactor();
    const clean = { message: { content: Array.from({ length: 3_000 }, (_, i) => ({ type: 'tool-call', id: `call_${i}`, arguments: '{"city":"Paris"}' })) } };
    expect(r.redactValue(clean)).toBe(clean);
    expect(r.redactValue(nested(200, 'plain'))).toEqual(nested(200, 'plain'));
  });

  it('masks a secret in a string, in a key and in its JSON form, copying only the changed path', () => {
    const r = redactor();
    const untouched = { a: 1 };
    const value = { untouched, list: ['x', `key=${KEY}`], [`k-${KEY}`]: true, json: '{"p":"pa\\"ss\\\\word-42"}' };
    const out = r.redactValue(value) as Record<string, unknown>;
    expect(out).toEqual({ untouched, list: ['x', `key=${MASK}`], [`k-${MASK}`]: true, json: '{"p":"[redacted TEST_PASSWORD]"}' });
    expect(out.untouched).toBe(untouched);
    expect(value.list[1]).toBe(`key=${KEY}`); // the input is not changed
  });

  it('masks a secret deeper than the check depth and past its node budget', () => {
    const r = redactor();
    expect(r.redactValue(nested(150, KEY))).toEqual(nested(150, MASK));
    const wide = Array.from({ length: 120_000 }, (_, i) => ({ i }));
    wide.push({ i: -1, text: KEY } as { i: number });
    const out = r.redactValue(wide) as { text?: string }[];
    expect(out.at(-1)!.text).toBe(MASK);
    expect(out[0]).toBe(wide[0]);
  });

  it('masks a value shared by two branches at both places', () => {
    const r = redactor();
    const shared = { text: KEY };
    const out = r.redactValue({ first: shared, second: [shared] }) as { first: { text: string }; second: { text: string }[] };
    expect(out.first.text).toBe(MASK);
    expect(out.second[0]!.text).toBe(MASK);
    expect(out.second[0]).toBe(out.first);
  });

  it('ends on a cycle, masking what it leads to', () => {
    const r = redactor();
    const loop: Record<string, unknown> = { text: KEY };
    loop.self = loop;
    const out = r.redactValue({ loop }) as { loop: { text: string } };
    expect(out.loop.text).toBe(MASK);
  });

  it('property: no string or key of the result holds the secret; without one the result is the input', () => {
    const r = redactor();
    const text = fc.oneof(
      fc.string(),
      fc.constant(KEY),
      fc.string().map((s) => `${s}${KEY}${s}`),
    );
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(text, tie('value'), { maxKeys: 4 })),
    })).value;
    fc.assert(
      fc.property(json, (value) => {
        const out = r.redactValue(value);
        const line = JSON.stringify(out);
        expect(line.includes(KEY)).toBe(false);
        if (!JSON.stringify(value).includes(KEY)) expect(out).toBe(value);
      }),
      { numRuns: 300 },
    );
  });
});
