/**
 * Cookbook: a redaction middleware — secrets the model writes are masked before anything sees them
 * (the terminal, the assembled message, the journal, the next request), checked with the
 * conformance kit.
 * Run: npx tsx cookbook/redaction.ts
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { definePlugin, rewriteText, z } from '../runtime/index.ts';
import { checkMiddleware, createTestHarness, runTurn, type MiddlewareReport } from '../testing/index.ts';

/**
 * `redact-secrets`: every match of `patterns` in model text and reasoning becomes `replace`.
 * `maxMatchLength` bounds a match (UTF-16 units): rewriteText holds back that much text at a delta
 * boundary, so a secret split over two deltas is still found.
 */
export const redactSecrets = definePlugin({
  name: 'redact-secrets',
  config: z.object({
    patterns: z.array(z.string()).min(1),
    replace: z.string().default('[redacted]'),
    maxMatchLength: z.number().int().positive().default(64),
  }),
  setup(ctx, config) {
    const pattern = new RegExp(config.patterns.map((source) => `(?:${source})`).join('|'), 'g');
    ctx.on('llm/stream', (request, next) => rewriteText(next(request), { pattern, replace: config.replace, maxMatchLength: config.maxMatchLength }));
  },
});

export default redactSecrets;

/** The key the scripted model leaks in this example (a made-up one). */
export const LEAKED = 'sk-demo-4f1c2b9e8d7a6c5b4a39281706f5e4d3';

export async function main(): Promise<{ answer: string; journalHasSecret: boolean; requestHasSecret: boolean; requestCount: number; report: MiddlewareReport }> {
  const config = { patterns: ['sk-[a-z]+-[0-9a-f]{32}'], maxMatchLength: 48 };
  // A model that writes the key, in 7-character deltas: it is split across deltas.
  const harness = await createTestHarness({
    script: [{ text: `Your key is ${LEAKED}, keep it safe.` }, { text: 'Noted.' }],
    scripted: { fragmentChars: 7 },
    plugins: [{ plugin: redactSecrets, config }],
  });
  try {
    const first = await runTurn(harness, 'What is my key?');
    // The next request is built from the journaled history: it carries the masked text only.
    let requestHasSecret = false;
    let requestCount = 0;
    harness.ctx.on('llm/stream', (request, next) => {
      requestCount++;
      requestHasSecret ||= JSON.stringify(request.messages).includes(LEAKED);
      return next(request);
    });
    await runTurn(first.session, 'Thanks.');
    const journalHasSecret = readFileSync(first.session.path, 'utf8').includes(LEAKED);
    // The conformance kit: the same plugin over its corpus of streams.
    const report = await checkMiddleware({ plugin: redactSecrets, config });
    return { answer: first.text, journalHasSecret, requestHasSecret, requestCount, report };
  } finally {
    await harness.dispose();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
