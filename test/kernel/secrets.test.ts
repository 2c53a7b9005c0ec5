/**
 * Issue 16: a known secret in a tool's live output is masked even when the tool streams it in
 * pieces — the redactor holds back an end of a piece that could begin a secret until the next piece
 * (or the end of the output) decides it. Live `tool/output` events, the journal and the result alike.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, SecretRedactor, secrets, type SessionEvent } from '../../runtime/index.ts';
import { createTestHarness, runTurn } from '../../testing/index.ts';

const KEY = 'sk-live-split-SENTINEL-0123456789abcdef';

describe('SecretStream', () => {
  const redactor = new SecretRedactor();
  redactor.add(KEY, 'TEST_KEY');
  redactor.add('pa"ss\\word-42', 'TEST_PASSWORD');
  const whole = `env: TEST_KEY=${KEY}\nagain ${KEY}${KEY} sk-live-s and "pa\\"ss\\\\word-42" then pa"ss\\word-42.\nsk-live-split-SENTINEL-0123`;

  it("property: any split of the text gives redact(whole) in total, and no piece shows a secret's start", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(whole.length), { maxLength: 12 }), (cuts) => {
        const points = [...new Set([0, ...cuts, whole.length])].sort((a, b) => a - b);
        const stream = redactor.stream();
        const shown: string[] = [];
        for (let i = 1; i < points.length; i++) shown.push(stream.push(whole.slice(points[i - 1], points[i])));
        shown.push(stream.flush());
        const text = shown.join('');
        expect(text).toBe(redactor.redact(whole));
        expect(text).not.toContain('SENTINEL-0123456789');
        expect(text).not.toContain('ss\\word');
      }),
      { numRuns: 500 },
    );
  });

  it('holds back only what could begin a secret; text without a secret start passes at once', () => {
    const stream = redactor.stream();
    expect(stream.push('plain output\n')).toBe('plain output\n');
    expect(stream.push('key: sk-live-spl')).toBe('key: ');
    expect(stream.push('it-SENTINEL-0123456789abcdef!')).toBe('[redacted TEST_KEY]!');
    expect(stream.push('ends in sk-')).toBe('ends in ');
    expect(stream.flush()).toBe('sk-'); // not a secret after all: shown at the end
    expect(stream.flush()).toBe('');
    expect(new SecretRedactor().stream().push('sk-live-s')).toBe('sk-live-s'); // no secrets: nothing held
  });
});

describe('live tool output', () => {
  it('a secret streamed in two pieces reaches no tool/output event, no journal line and no result', async () => {
    secrets().add(KEY, 'TEST_SPLIT_KEY');
    const leak = defineTool({
      name: 'leak',
      description: 'Prints the key in two pieces.',
      input: z.object({}),
      permission: 'read',
      async *execute() {
        yield `key=${KEY.slice(0, 20)}`;
        yield `${KEY.slice(20)} done`;
      },
    });
    const harness = await createTestHarness({ script: [{ toolCalls: [{ name: 'leak', arguments: {} }] }, { text: 'ok' }], tools: [leak] });
    try {
      const turn = await runTurn(harness, 'go');
      const outputs = turn.events.filter((e) => e.type === 'tool/output').map((e) => (e.data as SessionEvent<'tool/output'>['data']).text);
      expect(outputs.join('')).toBe('key=[redacted TEST_SPLIT_KEY] done');
      for (const piece of outputs) expect(piece).not.toContain(KEY.slice(0, 12));
      const journal = readFileSync(turn.session.path, 'utf8');
      expect(journal).not.toContain(KEY.slice(0, 12));
      expect(journal).not.toContain(KEY.slice(20));
      const result = turn.events.find((e) => e.type === 'tool/result')!.data as SessionEvent<'tool/result'>['data'];
      expect(JSON.stringify(result.message.content)).toContain('[redacted TEST_SPLIT_KEY]');
    } finally {
      await harness.dispose();
    }
  });
});
