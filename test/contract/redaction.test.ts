/**
 * Issue 14 acceptance: a redaction middleware (built on `rewriteText`) over a leaky adapter — the
 * real Anthropic adapter and SDK, served a stream that leaks a secret whole and split across
 * deltas, in text and in signed thinking. The secret must appear nowhere: not in the assembled
 * message, not in the journal file, not in the next request the fixture server sees. The rewritten
 * thinking block loses its signature (its replay entry); the untouched one keeps it byte for byte.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, definePlugin, rewriteText, type AssistantMessage, type Harness } from '../../runtime/index.ts';
import { projectRoot, startFixtureServer, type FixtureServer } from '../support/fixture-server.ts';
import { anthropicBody } from './support.ts';

const KEY_ENV = 'HARNESS_TEST_PROVIDER_KEY';
process.env[KEY_ENV] = 'test-key';

const SECRET = 'sk-SECRET123';
const redact = definePlugin({
  name: 'redact-secrets',
  setup(ctx) {
    ctx.on('llm/stream', (request, next) => rewriteText(next(request), { pattern: /sk-[A-Z0-9]{9}/g, replace: '[redacted]', maxMatchLength: 12 }));
  },
});

let server: FixtureServer;
let harness: Harness;
let dir: string;

beforeAll(async () => {
  server = await startFixtureServer();
  dir = mkdtempSync(join(tmpdir(), 'harness-redaction-'));
  harness = await createHarness({
    dataDir: join(dir, 'data'),
    config: {
      defaults: { provider: 'anthropic', model: 'claude-test' },
      plugins: [
        { module: join(projectRoot, 'plugins/llm-anthropic/index.ts'), config: { providers: { anthropic: { baseURL: server.anthropicBaseURL, apiKeyEnv: KEY_ENV, allowUnknownModels: true } } } },
        { plugin: redact },
      ],
    },
  });
});
afterAll(async () => {
  await harness?.dispose();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('redaction over a leaky adapter', () => {
  it('the secret, whole or split across deltas, is nowhere: message, journal file, next request', async () => {
    server.enqueue({
      body: anthropicBody([
        { type: 'thinking', deltas: ['The user wants ', 'a greeting.'], signature: 'sig-untouched' },
        { type: 'text', deltas: ['Your key is sk-SE', 'CRET123', ', keep it.'] },
        { type: 'thinking', deltas: ['I said sk-S', 'ECRET1', '23 aloud.'], signature: 'sig-rewritten' },
        { type: 'text', deltas: [`Again: ${SECRET}.`] },
      ]),
    });
    server.enqueue({ body: anthropicBody([{ type: 'text', deltas: ['Fine.'] }]) });
    const session = await harness.createSession({ cwd: dir });
    const messages: AssistantMessage[] = [];
    for await (const event of session.run('hello')) if (event.type === 'assistant/message') messages.push(event.data.message as AssistantMessage);
    for await (const event of session.run('and now?')) if (event.type === 'assistant/message') messages.push(event.data.message as AssistantMessage);
    const first = messages[0]!;
    expect(first.content).toEqual([
      { type: 'reasoning', text: 'The user wants a greeting.' },
      { type: 'text', text: 'Your key is [redacted], keep it.' },
      { type: 'reasoning', text: 'I said [redacted] aloud.' },
      { type: 'text', text: 'Again: [redacted].' },
    ]);
    // Lock-step: the rewritten thinking block lost its signature, the untouched one kept it as it was.
    expect(first.source.replayState!.blocks).toEqual([{ signature: 'sig-untouched' }, null, null, null]);

    const journal = readFileSync(session.path, 'utf8');
    const request = server.requests[1]!.rawBody;
    for (const where of [JSON.stringify(first), journal, request]) {
      for (const piece of [SECRET, 'SECRET', 'CRET123', 'ECRET1']) expect(where).not.toContain(piece);
    }
    expect(journal).toContain('[redacted]');
    // The next request: the untouched thinking goes back signed; the rewritten one is left out.
    const assistant = server.requests[1]!.body.messages[1];
    expect(assistant).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'The user wants a greeting.', signature: 'sig-untouched' },
        { type: 'text', text: 'Your key is [redacted], keep it.' },
        { type: 'text', text: 'Again: [redacted].' },
      ],
    });
    expect(request).not.toContain('sig-rewritten');
  });
});
