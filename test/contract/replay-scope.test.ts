/**
 * Issue 14, deliverable 2: replay state is scoped to its origin. Signed thinking made by one model
 * is not replayed natively to another model on the same route (the message degrades to
 * provider-neutral content with an INVALID_REPLAY_STATE diagnostic); the same model gets it back.
 * A Responses reasoning item is never sent without the item it leads to. Real SDKs, fixture server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAssistantMessage, createHarness, createUserMessage, type Diagnostic, type Harness } from '../../runtime/index.ts';
import { projectRoot, startFixtureServer, type FixtureServer } from '../support/fixture-server.ts';
import { join } from 'node:path';
import { anthropicBody } from './support.ts';

const KEY_ENV = 'HARNESS_TEST_PROVIDER_KEY';
process.env[KEY_ENV] = 'test-key';

let server: FixtureServer;
let harness: Harness;
const diagnostics: Diagnostic[] = [];

beforeAll(async () => {
  server = await startFixtureServer({ defaultResponse: { body: anthropicBody([{ type: 'text', deltas: ['ok'] }]) } });
  harness = await createHarness({
    config: {
      plugins: [
        { module: join(projectRoot, 'plugins/llm-anthropic/index.ts'), config: { providers: { anthropic: { baseURL: server.anthropicBaseURL, apiKeyEnv: KEY_ENV, allowUnknownModels: true } } } },
        {
          module: join(projectRoot, 'plugins/llm-openai/index.ts'),
          config: { providers: { openai: { api: 'responses', baseURL: server.openaiBaseURL, apiKeyEnv: KEY_ENV, allowUnknownModels: true } } },
        },
      ],
    },
  });
  harness.ctx.on('kernel/diagnostic', (d) => void diagnostics.push(d));
});
afterAll(async () => {
  await harness?.dispose();
  await server?.close();
});

async function send(provider: string, model: string, messages: Parameters<typeof createAssistantMessage>[0][]) {
  const prepared = await harness.llm.prepareCall({ provider, model });
  const before = server.requests.length;
  for await (const _ of prepared.stream({ ...prepared.config, messages: [createUserMessage('q'), ...messages.map(createAssistantMessage), createUserMessage('again')] })) void _;
  return server.requests[before]!.body;
}

const signed = {
  content: [
    { type: 'reasoning' as const, text: 'thinking it over' },
    { type: 'text' as const, text: 'answer' },
  ],
  provider: 'anthropic',
  model: 'claude-a',
  replayState: { response: { kind: 'anthropic', version: 1 }, blocks: [{ signature: 'sig-of-claude-a' }, null] },
};

describe('replay state scoped to adapter, route and model', () => {
  it('the same model gets its signed thinking back', async () => {
    const body = await send('anthropic', 'claude-a', [signed]);
    expect(body.messages[1].content).toEqual([
      { type: 'thinking', thinking: 'thinking it over', signature: 'sig-of-claude-a' },
      { type: 'text', text: 'answer' },
    ]);
  });

  it('another model on the same route: no signature crosses, the message goes provider-neutral, INVALID_REPLAY_STATE is reported', async () => {
    diagnostics.length = 0;
    const body = await send('anthropic', 'claude-b', [signed]);
    expect(JSON.stringify(body)).not.toContain('sig-of-claude-a');
    expect(body.messages[1].content).toEqual([{ type: 'text', text: 'answer' }]);
    expect(diagnostics.filter((d) => d.code === 'INVALID_REPLAY_STATE').map((d) => d.message)).toEqual([expect.stringMatching(/made by model "claude-a", this request is for "claude-b"/)]);
  });

  it('Responses: a reasoning item whose function call was cut is not sent alone', async () => {
    server.enqueue({ body: 'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r2","status":"completed","output":[]}}\n\n' });
    const body = await send('openai', 'gpt-test', [
      {
        content: [
          { type: 'text', text: 'let me look' },
          { type: 'reasoning', text: 'next I call a tool' },
        ],
        provider: 'openai',
        model: 'gpt-test',
        replayState: {
          response: { kind: 'openai-responses', version: 1 },
          blocks: [
            { type: 'message', id: 'msg_1' },
            { type: 'reasoning', id: 'rs_2', encryptedContent: 'enc', source: 'summary' },
          ],
        },
      },
    ]);
    expect(JSON.stringify(body.input)).not.toContain('rs_2');
    expect(body.input.filter((item: { type?: string }) => item.type === 'reasoning')).toEqual([]);
  });
});
