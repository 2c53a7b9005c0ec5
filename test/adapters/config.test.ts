/**
 * Adapter plugin configs: defaults, validation messages, catalogs, routes, provider info. No network.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../../runtime/index.ts';
import { ANTHROPIC_PLUGIN, OPENAI_PLUGIN } from './helpers.ts';

const open: Harness[] = [];
afterEach(async () => {
  for (const harness of open.splice(0)) await harness.dispose();
});

async function load(module: string, config?: unknown): Promise<Harness> {
  const harness = await createHarness({ config: { plugins: [{ module, config }] } });
  open.push(harness);
  return harness;
}

async function loadError(module: string, config: unknown): Promise<{ code: string; message: string }> {
  try {
    open.push(await createHarness({ config: { plugins: [{ module, config }] } }));
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('expected the load to fail');
}

describe('llm-openai config', () => {
  it('defaults: openai (responses) and deepseek (chat) routes, loaded without any API key', async () => {
    const saved = { openai: process.env.OPENAI_API_KEY, deepseek: process.env.DEEPSEEK_API_KEY };
    delete process.env.OPENAI_API_KEY;
    delete process.env.DEEPSEEK_API_KEY;
    try {
      const harness = await load(OPENAI_PLUGIN);
      expect(harness.llm.registry.list().map((r) => [r.provider, r.kind, r.owner])).toEqual([
        ['deepseek', 'openai-chat', 'llm-openai'],
        ['openai', 'openai-responses', 'llm-openai'],
      ]);
      const deepseek = await harness.llm.listModels('deepseek');
      expect(deepseek.map((m) => m.id)).toEqual(['deepseek-chat', 'deepseek-reasoner']);
      // Without a key, preflight refuses the call before any request; with one, it resolves.
      await expect(harness.llm.prepareCall({ provider: 'openai', model: 'gpt-5.4' })).rejects.toMatchObject({ code: 'AUTH', message: expect.stringContaining('OPENAI_API_KEY') });
      process.env.OPENAI_API_KEY = 'test-key';
      const prepared = await harness.llm.prepareCall({ provider: 'openai', model: 'gpt-5.4', reasoningEffort: 'xhigh' });
      delete process.env.OPENAI_API_KEY;
      expect(prepared.provider).toEqual({ provider: 'openai', kind: 'openai-responses', label: 'OpenAI' });
      expect(prepared.model).toMatchObject({ id: 'gpt-5.4', contextWindow: 1_050_000, maxOutputTokens: 128_000 });
      await expect(harness.llm.prepareCall({ provider: 'openai', model: 'gpt-nope' })).rejects.toMatchObject({ code: 'UNKNOWN_MODEL' });
      const auth = [];
      for await (const chunk of harness.llm.stream({ provider: 'openai', model: 'gpt-5.4', messages: [] })) auth.push(chunk);
      expect(auth).toEqual([{ type: 'finish', finish: { kind: 'error', failure: expect.objectContaining({ code: 'AUTH', apiKeyEnv: 'OPENAI_API_KEY' }) } }]);
    } finally {
      if (saved.openai !== undefined) process.env.OPENAI_API_KEY = saved.openai;
      else delete process.env.OPENAI_API_KEY;
      if (saved.deepseek !== undefined) process.env.DEEPSEEK_API_KEY = saved.deepseek;
    }
  });

  it('a listed provider inherits its built-in route; others need a baseURL; allowUnknownModels; defaults', async () => {
    const harness = await load(OPENAI_PLUGIN, {
      providers: {
        deepseek: { idleTimeoutMs: 5000, defaults: { temperature: 0.2 }, apiKeyEnv: 'HARNESS_TEST_CONFIG_KEY' },
        groq: { api: 'chat', baseURL: 'https://api.groq.com/openai/v1', allowUnknownModels: true, label: 'Groq', apiKeyEnv: 'HARNESS_TEST_CONFIG_KEY' },
      },
    });
    process.env.HARNESS_TEST_CONFIG_KEY = 'test-key';
    expect(
      harness.llm.registry
        .list()
        .map((r) => r.provider)
        .sort(),
    ).toEqual(['deepseek', 'groq']);
    const prepared = await harness.llm.prepareCall({ provider: 'deepseek', model: 'deepseek-reasoner' });
    expect(prepared.config.temperature).toBe(0.2);
    expect(prepared.model.maxOutputTokens).toBe(64_000);
    const groq = await harness.llm.prepareCall({ provider: 'groq', model: 'llama-3.3-70b-versatile' });
    expect(groq.model).toEqual({ id: 'llama-3.3-70b-versatile' });
    expect(groq.provider).toEqual({ provider: 'groq', kind: 'openai-chat', label: 'Groq' });
  });

  it('bad configs fail with INVALID_CONFIG naming the path', async () => {
    const cases: [unknown, RegExp][] = [
      [{ providers: { gw: { api: 'chat', allowUnknownModels: true } } }, /providers\.gw\.baseURL: provider "gw" is not built in/],
      [{ providers: { gw: { baseURL: 'https://x.test/v1' } } }, /providers\.gw\.models: provider "gw" lists no models/],
      [{ providers: { openai: { baseURL: 'not a url' } } }, /providers\.openai\.baseURL: baseURL must be an absolute URL/],
      [{ providers: { openai: { compat: 'deepseek' } } }, /providers\.openai\.compat: compat applies to api "chat" routes only/],
      [{ providers: { openai: { apiKeyEnv: 'my key' } } }, /providers\.openai\.apiKeyEnv: apiKeyEnv must be an environment variable name/],
      [{ providers: { openai: { idleTimeoutMs: -1 } } }, /providers\.openai\.idleTimeoutMs/],
      [
        { providers: { openai: { models: [{ id: 'm', reasoningEfforts: ['low'], defaultReasoningEffort: 'high' }] } } },
        /providers\.openai\.models\.0\.defaultReasoningEffort: defaultReasoningEffort must be one of/,
      ],
      [{ providers: { openai: { models: [{ id: 'm' }, { id: 'm' }] } } }, /providers\.openai\.models\.1\.id: model "m" is listed twice/],
      [{ providers: { openai: { surprise: true } } }, /providers\.openai\.surprise: unknown key \(known here: [\w, ]*baseURL/],
      [{ providers: { openai: { headers: { 'bad header': 'x' } } } }, /providers\.openai\.headers\.bad header: header name "bad header" is not an HTTP token/],
      [{ providers: { openai: { headers: { 'x-ok': 'a\r\nb' } } } }, /header values cannot contain line breaks/],
    ];
    for (const [config, pattern] of cases) {
      const error = await loadError(OPENAI_PLUGIN, config);
      expect(error.code).toBe('INVALID_CONFIG');
      expect(error.message).toMatch(/Plugin "llm-openai" has an invalid config/);
      expect(error.message).toMatch(pattern);
    }
  });
});

describe('llm-anthropic config', () => {
  it('default anthropic route with the current catalog, loaded without a key', async () => {
    const saved = process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_API_KEY;
    try {
      const harness = await load(ANTHROPIC_PLUGIN);
      expect(harness.llm.registry.list().map((r) => [r.provider, r.kind])).toEqual([['anthropic', 'anthropic']]);
      const models = await harness.llm.listModels('anthropic');
      expect(models.map((m) => m.id)).toContain('claude-opus-5-5');
      await expect(harness.llm.prepareCall({ provider: 'anthropic', model: 'claude-sonnet-5-5' })).rejects.toMatchObject({ code: 'AUTH', message: expect.stringContaining('ANTHROPIC_API_KEY') });
      process.env.ANTHROPIC_API_KEY = 'test-key';
      const prepared = await harness.llm.prepareCall({ provider: 'anthropic', model: 'claude-sonnet-5-5', reasoningEffort: 'high' });
      delete process.env.ANTHROPIC_API_KEY;
      expect(prepared.provider.kind).toBe('anthropic');
      expect(prepared.model.contextWindow).toBe(1_000_000);
      const chunks = [];
      // The key went away after preparing: the call itself still fails with AUTH, as one finish.
      for await (const chunk of prepared.stream({ ...prepared.config, messages: [] })) chunks.push(chunk);
      expect(chunks).toHaveLength(1);
      expect(chunks[0]).toMatchObject({ type: 'finish', finish: { kind: 'error', failure: { code: 'AUTH', apiKeyEnv: 'ANTHROPIC_API_KEY' } } });
    } finally {
      if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved;
      else delete process.env.ANTHROPIC_API_KEY;
    }
  });

  it('bad configs fail with INVALID_CONFIG naming the path', async () => {
    const cases: [unknown, RegExp][] = [
      [{ providers: { proxy: { allowUnknownModels: true } } }, /providers\.proxy\.baseURL: provider "proxy" is not built in/],
      [{ providers: { anthropic: { models: [] } } }, /providers\.anthropic\.models: provider "anthropic" lists no models/],
      [{ providers: { anthropic: { models: [{ id: 'c', thinkingBudgets: { low: 10 } }] } } }, /thinkingBudgets\.low: a thinking budget is at least 1024 tokens/],
      [{ providers: { anthropic: { models: [{ id: 'c', thinking: 'sometimes' }] } } }, /providers\.anthropic\.models\.0\.thinking/],
    ];
    for (const [config, pattern] of cases) {
      const error = await loadError(ANTHROPIC_PLUGIN, config);
      expect(error.code).toBe('INVALID_CONFIG');
      expect(error.message).toMatch(pattern);
    }
  });

  it('both plugins load side by side; a taken route is DUPLICATE_ADAPTER', async () => {
    const harness = await createHarness({ config: { plugins: [{ module: OPENAI_PLUGIN }, { module: ANTHROPIC_PLUGIN }] } });
    open.push(harness);
    expect(
      harness.llm.registry
        .list()
        .map((r) => r.provider)
        .sort(),
    ).toEqual(['anthropic', 'deepseek', 'openai']);
    const clash = await createHarness({
      config: { plugins: [{ module: OPENAI_PLUGIN, config: { providers: { anthropic: { api: 'chat', baseURL: 'https://x.test/v1', allowUnknownModels: true } } } }, { module: ANTHROPIC_PLUGIN }] },
    }).catch((error: unknown) => error as { code: string; message: string; failure: { causeCode?: string } });
    expect(JSON.stringify(clash)).toMatch(/DUPLICATE_ADAPTER/);
  });
});
