/**
 * `harness-runtime/testing` (testing/index.ts): the scripted model with inline scripts, a test
 * harness, runTurn, and the loopback provider server with a fixtures folder of the caller's choice.
 */
import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { definePlugin, defineTool, z } from '../../runtime/index.ts';
import { createTestHarness, fixturePath, runTurn, scriptedModel, startFixtureServer, type FixtureServer, type TestHarness } from '../../testing/index.ts';
import { providerStreamsDir } from '../support/fixture-server.ts';
import { plugin } from '../agent/support.ts';

const greeter = definePlugin({
  name: 'greeter',
  config: z.object({ greeting: z.string().default('Hello') }).default({ greeting: 'Hello' }),
  setup(ctx, config) {
    ctx.tools.register(defineTool({ name: 'greet', description: 'Greets someone.', input: z.object({ name: z.string() }), permission: 'read', execute: ({ name }) => `${config.greeting}, ${name}!` }));
  },
});

let harness: TestHarness | undefined;
let server: FixtureServer | undefined;
afterEach(async () => {
  await harness?.dispose();
  await server?.close();
  harness = undefined;
  server = undefined;
});

describe('createTestHarness + runTurn on the scripted model', () => {
  it('runs a tool call of a plugin under test and collects the answer, the calls and the end', async () => {
    harness = await createTestHarness({
      script: (context) => (context.step === 1 ? { toolCalls: [{ name: 'greet', arguments: { name: 'Ada' } }] } : { text: `The tool said: ${context.toolResults[0]?.text}` }),
      plugins: [{ plugin: greeter, config: { greeting: 'Hi' } }],
    });
    const turn = await runTurn(harness, 'Greet Ada');
    expect(turn.end.reason).toBe('completed');
    expect(turn.text).toBe('The tool said: Hi, Ada!');
    expect(turn.toolCalls).toEqual([{ name: 'greet', arguments: '{"name":"Ada"}' }]);
    expect(turn.usage.outputTokens).toBeGreaterThan(0);
    expect(turn.session.path.startsWith(harness.dir)).toBe(true);
    const second = await runTurn(turn.session, 'again', { approve: () => 'deny' });
    expect(second.end.reason).toBe('completed');
    expect(second.events.some((event) => event.type === 'approval/decided')).toBe(true);
  });

  it('takes a reply list (one per step, the last repeating) and a JSON rule list', async () => {
    harness = await createTestHarness({ script: [{ text: 'first' }] });
    expect((await runTurn(harness, 'x')).text).toBe('first');
    await harness.dispose();
    harness = await createTestHarness({ script: { replies: [{ when: { userIncludes: 'ping' }, reply: { text: 'pong' } }, { reply: { text: '?' } }] } });
    expect((await runTurn(harness, 'ping please')).text).toBe('pong');
    expect((await runTurn(harness, 'other')).text).toBe('?');
  });

  it('removes its temporary folder on dispose, and rejects a malformed script with INVALID_SCRIPT', async () => {
    const test = await createTestHarness({ script: [{ text: 'x' }] });
    await runTurn(test, 'x');
    await test.dispose();
    expect(existsSync(test.dir)).toBe(false);
    expect(() => scriptedModel({ replies: [{ reply: { text: 1 } }] } as never)).toThrow(expect.objectContaining({ code: 'INVALID_SCRIPT' }));
  });
});

describe('the loopback provider server with a fixtures folder of its own', () => {
  it('serves a recorded body from a caller-chosen folder to the real openai SDK behind llm-openai', async () => {
    // An installed user's fixtures live in their own project: copy one recording to a folder of the test's.
    const own = mkdtempSync(join(tmpdir(), 'harness-fixtures-'));
    cpSync(join(providerStreamsDir, 'openai-chat/text-with-include-usage.sse'), join(own, 'openai-chat/reply.sse'), { recursive: true });
    server = await startFixtureServer({ fixturesDir: own });
    server.enqueue('openai-chat/reply.sse');
    process.env.HARNESS_TESTING_TEST_KEY = 'k';
    harness = await createTestHarness({
      defaults: { provider: 'fx', model: 'gpt-4o' },
      plugins: [
        {
          module: plugin('llm-openai'),
          config: { providers: { fx: { api: 'chat', compat: 'openai', baseURL: server.openaiBaseURL, apiKeyEnv: 'HARNESS_TESTING_TEST_KEY', models: [{ id: 'gpt-4o' }] } } },
        },
      ],
    });
    const turn = await runTurn(harness, 'hi');
    expect(turn.end.reason).toBe('completed');
    expect(turn.text.length).toBeGreaterThan(0);
    expect(server.requests[0]!.path).toBe('/v1/chat/completions');
    expect(server.requests[0]!.headers.authorization).toBe('Bearer k');
  });

  it('names the fix when a relative fixture path has no folder to resolve from', () => {
    expect(() => fixturePath('openai-chat/x.sse')).toThrow(/no fixturesDir was given/);
    expect(fixturePath('/abs/x.sse')).toBe('/abs/x.sse');
  });
});
