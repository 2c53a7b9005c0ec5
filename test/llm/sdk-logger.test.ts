/**
 * The provider SDKs' own log lines (issue #16, item 7): an unparseable SSE frame makes the SDK log
 * it (`Could not parse message into JSON: …`). With the clients built by our transports, the line
 * reaches stderr escaped (ESC → ␛) and with known keys masked — never the raw bytes a provider sent.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAnthropicClient } from '../../plugins/llm-anthropic/transport.ts';
import { createOpenAIClient } from '../../plugins/llm-openai/transport.ts';
import { startFixtureServer, type FixtureServer } from '../support/fixture-server.ts';

const KEY = 'sk-logger-sentinel-0123456789';
const HOSTILE = `\u001b]0;pwned\u0007\u001b[2J${KEY}`;
let server: FixtureServer;
beforeAll(async () => {
  server = await startFixtureServer();
});
afterAll(() => server.close());
afterEach(() => vi.restoreAllMocks());

/** What is written to stderr (and console) while `body` runs. */
async function stderrOf(body: () => Promise<void>): Promise<string> {
  let out = '';
  vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: unknown) => ((out += String(chunk)), true)) as never);
  for (const level of ['error', 'warn', 'info', 'debug', 'log'] as const) vi.spyOn(console, level).mockImplementation((...args: unknown[]) => void (out += `${args.map(String).join(' ')}\n`));
  await body().catch(() => undefined);
  return out;
}

describe('SDK logger', () => {
  it('openai: an unparseable frame with escapes is logged escaped and masked', async () => {
    server.enqueue({ body: `data: {"id":"x","object":"chat.completion.chunk","choices":[]}\n\ndata: ${HOSTILE} not json\n\n` });
    const client = createOpenAIClient({ provider: 'openai', baseURL: server.openaiBaseURL, apiKeyEnv: 'TEST_OPENAI_KEY' } as never, KEY);
    const out = await stderrOf(async () => {
      const stream = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], stream: true });
      for await (const _ of stream);
    });
    expect(out).toContain('Could not parse message into JSON');
    expect(out).toContain('␛]0;pwned␇␛[2J');
    expect(out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(out).not.toContain(KEY);
    expect(out).toContain('[redacted TEST_OPENAI_KEY]');
  });

  it('anthropic: the same', async () => {
    server.enqueue({ body: `event: message_start\ndata: ${HOSTILE} not json\n\n` });
    const client = createAnthropicClient({ provider: 'anthropic', baseURL: server.anthropicBaseURL, apiKeyEnv: 'TEST_ANTHROPIC_KEY' } as never, KEY);
    const out = await stderrOf(async () => {
      const stream = await client.messages.create({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], stream: true });
      for await (const _ of stream);
    });
    expect(out).toContain('Could not parse message into JSON');
    expect(out).toContain('␛]0;pwned␇␛[2J');
    expect(out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(out).not.toContain(KEY);
  });
});
