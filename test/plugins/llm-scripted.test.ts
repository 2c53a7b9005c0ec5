/**
 * The scripted adapter built by hand (as a plain-JS user does): unset options take their defaults,
 * so the deltas carry the content (block-end carries none, by the block rule); a fragment size that
 * would lose the content is refused. The default script quotes a prompt back whole only when it is short.
 */
import { describe, expect, it } from 'vitest';
import { HarnessError, type StreamChunk } from '../../runtime/index.ts';
import { defaultScript } from '../../plugins/llm-scripted/default-script.ts';
import { fragments } from '../../plugins/llm-scripted/adapter.ts';
import { ScriptedAdapter } from '../../plugins/llm-scripted/index.ts';
import { scriptContext } from '../../plugins/llm-scripted/script.ts';

async function chunksOf(adapter: ScriptedAdapter): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  for await (const chunk of adapter.stream({ model: 'm', messages: [{ id: 'u', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }] } as never)) out.push(chunk);
  return out;
}

describe('ScriptedAdapter options', () => {
  it('defaults the fragment size: the text and the arguments arrive whole in their deltas', async () => {
    const adapter = new ScriptedAdapter({ scripts: new Map([['m', () => ({ text: 'The sum is 42, as the tool said.', toolCalls: [{ name: 'add', arguments: { a: 2, b: 40 } }] })]]) });
    const chunks = await chunksOf(adapter);
    const text = chunks.flatMap((c) => (c.type === 'text-delta' ? [c.text] : [])).join('');
    const args = chunks.flatMap((c) => (c.type === 'tool-call-delta' ? [c.arguments] : [])).join('');
    expect(text).toBe('The sum is 42, as the tool said.');
    expect(chunks.filter((c) => c.type === 'text-delta').length).toBe(3); // 12 characters a fragment
    expect(JSON.parse(args)).toEqual({ a: 2, b: 40 });
  });

  it('refuses a fragment size that is not a positive integer, naming it', () => {
    for (const fragmentChars of [0, -1, 1.5, Number.NaN]) {
      const error = (() => {
        try {
          return new ScriptedAdapter({ scripts: new Map(), fragmentChars });
        } catch (e) {
          return e;
        }
      })();
      expect(HarnessError.is(error) && error.code).toBe('INVALID_CONFIG');
      expect((error as Error).message).toContain('fragmentChars must be a positive integer');
    }
  });
});

describe('scripted-default quoting the prompt', () => {
  const reply = (prompt: string, tools: string[] = ['list_dir']) =>
    defaultScript(
      scriptContext(
        [{ id: 'u', role: 'user', content: [{ type: 'text', text: prompt }], source: { kind: 'user' } }] as never,
        tools.map((name) => ({ name, description: '', inputSchema: {} })) as never,
        {
          model: 'scripted-default',
        },
      ),
    );

  it('quotes a short prompt whole', () => {
    expect(reply('What is in this workspace?').reasoning).toBe('The user asked: "What is in this workspace?". I should look at the workspace before answering, starting with its files.');
  });

  it('quotes only the head of a huge prompt and says how much was cut', () => {
    const huge = 'a'.repeat(1024 * 1024);
    const reasoning = reply(huge).reasoning!;
    expect(reasoning).toBe(`The user asked: "${'a'.repeat(200)}…" (200 of its 1,048,576 characters; the rest cut). I should look at the workspace before answering, starting with its files.`);
    const withoutTools = reply(huge, []).text!;
    expect(withoutTools.length).toBeLessThan(500);
    expect(withoutTools).toContain('(200 of its 1,048,576 characters; the rest cut)');
    // A cut never splits a surrogate pair: the quote ends on a whole character.
    const emoji = `${'a'.repeat(199)}😀${'b'.repeat(500)}`;
    expect(reply(emoji).reasoning).toContain(`"${'a'.repeat(199)}…" (199 of its 701 characters; the rest cut)`);
  });
});

describe('ScriptedAdapter fragments', () => {
  const deltas = async (text: string, fragmentChars?: number) => {
    const adapter = new ScriptedAdapter({
      scripts: new Map([['m', () => ({ text, reasoning: text, toolCalls: [{ name: 'say', arguments: { text } }] })]]),
      ...(fragmentChars ? { fragmentChars } : {}),
    });
    const chunks = await chunksOf(adapter);
    return {
      text: chunks.flatMap((c) => (c.type === 'text-delta' ? [c.text] : [])),
      reasoning: chunks.flatMap((c) => (c.type === 'reasoning-delta' ? [c.text] : [])),
      args: chunks.flatMap((c) => (c.type === 'tool-call-delta' ? [c.arguments] : [])),
    };
  };
  const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

  it('never cuts a surrogate pair or a grapheme (the trial prompt split 🎉 between two text deltas)', async () => {
    // "héllo 🎉 " puts the emoji's high surrogate at unit 11 of a 12-unit fragment.
    const text = 'The user said héllo 🎉 and 👍🏽 then e\u0301 and 🇫🇷 — done.';
    for (const size of [1, 2, 3, 5, 12]) {
      const { text: t, reasoning, args } = await deltas(text, size);
      for (const pieces of [t, reasoning, args]) {
        for (const piece of pieces) expect(piece, `size ${size}: ${JSON.stringify(piece)}`).not.toMatch(loneSurrogate);
      }
      expect(t.join('')).toBe(text);
      expect(reasoning.join('')).toBe(text);
      expect(JSON.parse(args.join(''))).toEqual({ text });
      const segments = [...new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(text)].map((s) => s.segment);
      // Every cut is between two graphemes: each fragment is a run of whole graphemes.
      let at = 0;
      for (const piece of t) {
        let joined = '';
        while (joined.length < piece.length) joined += segments[at++];
        expect(joined).toBe(piece);
      }
    }
  });

  it('cuts ASCII text exactly every fragmentChars units, as before', async () => {
    expect((await deltas('abcdefghij', 4)).text).toEqual(['abcd', 'efgh', 'ij']);
  });
  it('cuts a long text as a whole-text segmentation would (only a window around each cut is segmented)', () => {
    const text = 'héllo 🎉 👨‍👩‍👧‍👦 e\u0301 🇫🇷 '.repeat(400);
    const reference: string[] = [];
    let start = 0;
    for (const { index } of new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(text)) {
      if (index - start >= 7) {
        reference.push(text.slice(start, index));
        start = index;
      }
    }
    if (start < text.length) reference.push(text.slice(start));
    expect(fragments(text, 7)).toEqual(reference);
    expect(fragments('', 7)).toEqual(['']);
  });
});
