/**
 * Real providers through the CLI: `harness run --provider openai` against the fixture server (base URL
 * from the environment, read by harness.config.ts) streams a recorded real response end to end
 * through the real SDK; a missing key is one error line naming the variable.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../support/fixture-server.ts';
import { filesOf, harness, journalOf, projectRoot, readEvents, tempDir } from './support.ts';

const home = tempDir('providers');
let server: FixtureServer;

beforeAll(async () => {
  server = await startFixtureServer();
});
afterAll(async () => {
  await server.close();
  home.cleanup();
});

describe('real providers from the CLI', { timeout: 120_000 }, () => {
  it('run --provider openai streams a recorded Responses API stream through the real SDK, then verifies', async () => {
    server.enqueue('openai-responses/text-output-text-delta.sse');
    const result = await harness(['run', 'What is the capital of France?', '--provider', 'openai', '--approve', 'deny-all'], {
      home: home.dir,
      env: { OPENAI_API_KEY: 'sk-test-fixture', OPENAI_BASE_URL: server.openaiBaseURL },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('The capital of France is Paris.');
    // gpt-5.5 (the provider's first model) is in the config's price table: the footer has a cost.
    expect(result.stdout).toMatch(/^tokens {2}this turn: [\d,]+ in · [\d,]+ out · [\d,]+ cache read · [\d,]+ reasoning · cost \$\d/m);
    expect(result.stdout).toMatch(/^ {8}session: {3}[\d,]+ in · [\d,]+ out · [\d,]+ cache read · [\d,]+ reasoning · cost \$\d\S* \(1 turn\)$/m);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ method: 'POST', path: '/v1/responses' });
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-test-fixture');
    expect(server.requests[0]!.body).toMatchObject({ model: 'gpt-5.5', stream: true });
    const events = readEvents(journalOf(result.stdout));
    const message = events.find((e) => e.type === 'assistant/message')!;
    expect(message.data.message.source).toMatchObject({ kind: 'model', provider: 'openai', model: 'gpt-5.5', replayState: { response: { kind: 'openai-responses' } } });
    expect(events.find((e) => e.type === 'request/header')!.data.header.config).toMatchObject({ provider: 'openai', model: 'gpt-5.5' });
    const verify = await harness(['replay', journalOf(result.stdout), '--verify'], { home: home.dir });
    expect(verify.code).toBe(0);
    // The recorded real stream re-runs offline as a cassette.
    const cassette = await harness(['replay', journalOf(result.stdout), '--cassette'], { home: home.dir });
    expect(cassette.code).toBe(0);
  });

  it('-p anthropic without a model takes the mid-priced current model (Sonnet), priced in the footer', async () => {
    server.enqueue('anthropic/thinking-signature-delta-then-text.sse');
    const before = server.requests.length;
    const result = await harness(['run', 'Hello', '-p', 'anthropic', '--approve', 'deny-all'], {
      home: home.dir,
      env: { ANTHROPIC_API_KEY: 'sk-ant-test-fixture', ANTHROPIC_BASE_URL: server.anthropicBaseURL },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(server.requests.slice(before)).toHaveLength(1);
    expect(server.requests.at(-1)!.body).toMatchObject({ model: 'claude-sonnet-5-5' });
    expect(result.stdout).toMatch(/^tokens {2}this turn: .* · cost \$\d/m);
  });

  it('an unpriced model: the cost is unknown, with where prices live', async () => {
    const dir = join(home.dir, 'unpriced');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    const plugin = (name: string) => JSON.stringify(join(projectRoot, 'plugins', name, 'index.ts'));
    writeFileSync(
      join(dir, 'harness.config.ts'),
      `export default { defaults: { provider: 'scripted', model: 'scripted-default' }, plugins: [{ module: ${plugin('llm-scripted')} }, { module: ${plugin('token-meter')}, config: { prices: {} } }] };\n`,
    );
    const result = await harness(['run', 'Hello', '--config', join(dir, 'harness.config.ts'), '--cwd', dir], { home: home.dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^tokens {2}this turn: [\d,]+ in · [\d,]+ out · [\d,]+ reasoning · cost unknown \(no price for scripted\/scripted-default; prices live in token-meter's `prices` in the config\)$/m,
    );
    expect(result.stdout).not.toContain('$');
  });

  it('an OpenAI-compatible server at OPENAI_COMPATIBLE_BASE_URL: --provider openai-compatible speaks Chat Completions, with no key', async () => {
    server.enqueue('openai-chat/text-with-include-usage.sse');
    const before = server.requests.length;
    const result = await harness(['run', 'Hello', '--provider', 'openai-compatible', '--model', 'local-model', '--approve', 'deny-all'], {
      home: home.dir,
      env: { OPENAI_COMPATIBLE_BASE_URL: server.openaiBaseURL },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const [request] = server.requests.slice(before);
    expect(request).toMatchObject({ method: 'POST', path: '/v1/chat/completions', body: { model: 'local-model', stream: true } });
    expect(request!.headers.authorization ?? '').not.toMatch(/Bearer \S/); // no key was sent
    const events = readEvents(journalOf(result.stdout));
    expect(events.find((e) => e.type === 'turn/end')!.data.reason).toBe('completed');
    expect(events.find((e) => e.type === 'assistant/message')!.data.message.source).toMatchObject({ provider: 'openai-compatible', model: 'local-model' });
  });

  it('a 404 on /responses hints at the Chat Completions provider', async () => {
    server.enqueue({ status: 404, json: { error: { message: 'no route /v1/responses', type: 'invalid_request_error' } } });
    const result = await harness(['run', 'Hello', '--provider', 'openai', '--model', 'gpt-4o', '--approve', 'deny-all'], {
      home: home.dir,
      env: { OPENAI_API_KEY: 'sk-test-fixture', OPENAI_BASE_URL: server.openaiBaseURL },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^hint: this server has no Responses API/m);
  });

  it('a missing key is one error line naming OPENAI_API_KEY, exit code 1, and no request is sent', async () => {
    const before = server.requests.length;
    const result = await harness(['run', 'Hello', '--provider', 'openai', '--model', 'gpt-4o'], { home: home.dir, env: { OPENAI_BASE_URL: server.openaiBaseURL } });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('error AUTH: No API key for provider "openai": set the environment variable OPENAI_API_KEY.\n');
    expect(result.stdout).toBe('');
    expect(server.requests.length).toBe(before);
  });

  it('the same for anthropic and deepseek', async () => {
    for (const [provider, variable] of [
      ['anthropic', 'ANTHROPIC_API_KEY'],
      ['deepseek', 'DEEPSEEK_API_KEY'],
    ] as const) {
      const result = await harness(['run', 'Hello', '--provider', provider], { home: home.dir });
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain(`error AUTH: `);
      expect(result.stderr).toContain(variable);
    }
  });

  it("a missing key leaves no journal: run and chat check the call (the adapter's preflight) before a session exists", async () => {
    // An adapter of a test project whose preflight refuses a missing key, like the real providers'.
    const dir = join(home.dir, 'keyed');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    writeFileSync(
      join(dir, 'keyed.ts'),
      `import { definePlugin, LlmAdapter, LlmError } from ${JSON.stringify(join(projectRoot, 'runtime/index.ts'))};
class Keyed extends LlmAdapter {
  listModels() { return [{ id: 'keyed-1', contextWindow: 8000 }]; }
  preflight() { if (!process.env.KEYED_API_KEY) throw new LlmError('AUTH', 'No API key for provider "keyed": set the environment variable KEYED_API_KEY.'); }
  async *stream() { yield { type: 'finish', finish: { kind: 'stop' } }; }
}
export default definePlugin({ name: 'keyed', setup(ctx) { ctx.llm.registerAdapter(['keyed'], new Keyed()); } });
`,
    );
    writeFileSync(join(dir, 'harness.config.ts'), `export default { defaults: { provider: 'keyed', model: 'keyed-1' }, plugins: [{ module: './keyed.ts' }] };\n`);
    const fresh = join(home.dir, 'no-journal');
    const cwd = join(projectRoot, 'cookbook/demo-workspace');
    const results = await Promise.all([
      harness(['run', 'Hello', '--config', join(dir, 'harness.config.ts'), '--cwd', cwd], { home: fresh }),
      harness(['chat', '--config', join(dir, 'harness.config.ts'), '--cwd', cwd], { home: fresh, input: 'Hello\n' }),
    ]);
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stderr).toBe('error AUTH: No API key for provider "keyed": set the environment variable KEYED_API_KEY.\n');
    }
    expect(filesOf(join(fresh, 'sessions'))).toEqual([]);
  });

  it('a missing key for openai, deepseek or anthropic leaves no journal (their adapters refuse it in preflight)', async () => {
    const fresh = join(home.dir, 'no-journal-real');
    const cwd = join(projectRoot, 'cookbook/demo-workspace');
    const results = await Promise.all([
      harness(['run', 'Hello', '--provider', 'openai', '--cwd', cwd], { home: fresh, env: { OPENAI_BASE_URL: server.openaiBaseURL } }),
      harness(['run', 'Hello', '--provider', 'deepseek', '--cwd', cwd], { home: fresh }),
      harness(['chat', '--provider', 'anthropic', '--cwd', cwd], { home: fresh, input: 'Hello\n' }),
    ]);
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^error AUTH: .*(OPENAI|DEEPSEEK|ANTHROPIC)_API_KEY/);
    }
    expect(filesOf(join(fresh, 'sessions'))).toEqual([]);
  });

  it('an unknown model fails before a journal is written', async () => {
    const fresh = tempDir('providers-unknown');
    try {
      const result = await harness(['run', 'Hello', '--provider', 'openai', '--model', 'gpt-0'], { home: fresh.dir });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^error UNKNOWN_MODEL: /);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      const list = await harness(['sessions', '--json'], { home: fresh.dir });
      expect(list.stdout).toBe('');
    } finally {
      fresh.cleanup();
    }
  });
});
