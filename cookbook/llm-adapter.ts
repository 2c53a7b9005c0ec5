/**
 * Cookbook: adding an LLM adapter — an OpenAI-compatible provider, by config alone.
 * Run: npx tsx cookbook/llm-adapter.ts   (serves a recorded real stream from a local fixture server)
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, messageText, type SessionEvent } from '../runtime/index.ts';
import { startFixtureServer } from '../testing/index.ts';

/** The plugin entry a harness.config.ts would carry for a provider called `acme`. */
export function acmePlugin(baseURL: string) {
  return {
    module: '../plugins/llm-openai/index.ts',
    config: {
      providers: {
        openai: {}, // keep the built-in routes you still want: listing providers replaces the defaults
        acme: {
          api: 'chat' as const, // OpenAI Chat Completions wire format
          label: 'Acme Cloud',
          baseURL, // e.g. https://api.acme.example/v1
          apiKeyEnv: 'ACME_API_KEY', // read at call time; a missing key is an AUTH error naming it
          compat: 'generic' as const,
          models: [{ id: 'acme-large', contextWindow: 128_000, maxOutputTokens: 8_192 }],
        },
      },
    },
  };
}

export async function main(): Promise<{ text: string; usage: unknown; provider: string; requestPath: string }> {
  // harness-runtime/testing's loopback server, serving the recorded provider streams (`$HARNESS_FIXTURES_DIR`, else ../shared/fixtures).
  const fixtures = process.env.HARNESS_FIXTURES_DIR ?? fileURLToPath(new URL('../../shared/fixtures', import.meta.url));
  const streams = join(fixtures, 'provider-streams');
  if (!existsSync(streams))
    throw new Error(`This example serves a recorded provider stream from ${streams}, which is not there; set HARNESS_FIXTURES_DIR to the shared fixtures folder (the one with provider-streams/).`);
  const server = await startFixtureServer({ fixturesDir: streams });
  server.enqueue('openai-chat/text-with-include-usage.sse'); // a recorded real response
  process.env.ACME_API_KEY ??= 'sk-acme-demo';
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-'));
  const harness = await createHarness({ config: { plugins: [acmePlugin(server.openaiBaseURL)] }, baseDir: fileURLToPath(new URL('.', import.meta.url)), dataDir });
  try {
    const session = await harness.createSession({ cwd: dataDir });
    let message: SessionEvent<'assistant/message'> | undefined;
    for await (const event of session.run('Tell me a joke.', { provider: 'acme', model: 'acme-large' })) {
      if (event.type === 'assistant/chunk' && event.data.chunk.type === 'text-delta') process.stdout.write(event.data.chunk.text);
      if (event.type === 'assistant/message') message = event as SessionEvent<'assistant/message'>;
    }
    process.stdout.write('\n');
    return { text: messageText(message!.data.message), usage: message!.data.usage, provider: message!.data.message.source.provider, requestPath: server.requests[0]!.path };
  } finally {
    await harness.dispose();
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    console.log(await main());
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
