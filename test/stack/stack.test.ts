/**
 * The built-in stack (stack/index.ts, `harness-runtime/stack`): a config starts from it and changes
 * only what it names; the runtime itself names no plugin.
 */
import { existsSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHarness } from '../../runtime/index.ts';
import { DEFAULT_DEFAULTS, defaultConfig, defaultPlugins } from '../../stack/index.ts';

const names = (plugins: { module?: string }[]) => plugins.map((p) => basename(dirname(p.module!)));

describe('defaultPlugins', () => {
  it('lists the shipped plugins in the stack order, by absolute module path', () => {
    const plugins = defaultPlugins();
    expect(names(plugins)).toEqual(['llm-scripted', 'llm-openai', 'llm-anthropic', 'llm-retry', 'token-meter', 'compaction', 'tools-workspace', 'approvals', 'journal-postgres']);
    for (const plugin of plugins) expect(existsSync(plugin.module!)).toBe(true);
  });

  it('merges a named plugin config over the stack one, leaves out a plugin given false, and adds a provider as one entry', () => {
    const plugins = defaultPlugins({
      approvals: { default: 'allow-all' },
      compaction: false,
      providers: { ollama: { api: 'chat', baseURL: 'http://127.0.0.1:11434/v1', allowUnknownModels: true } },
      tokenMeter: { prices: { ollama: { '*': { inputTokens: 0, outputTokens: 0 } } } },
    });
    expect(names(plugins)).not.toContain('compaction');
    const config = (name: string) => plugins.find((p) => p.module!.includes(`/${name}/`))!.config as Record<string, any>;
    expect(config('approvals')).toEqual({ default: 'allow-all' });
    expect(Object.keys(config('llm-openai').providers)).toEqual(['openai', 'deepseek', 'openai-compatible', 'ollama']);
    expect(Object.keys(config('token-meter').prices)).toEqual(['openai', 'deepseek', 'anthropic', 'scripted', 'ollama']);
    expect(config('llm-scripted')).toEqual({ paceMs: 12 });
  });

  it('builds a harness whose default model answers offline (the built-in config)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'harness-stack-'));
    const harness = await createHarness({ config: defaultConfig({ scripted: { paceMs: 0 } }), dataDir: join(dir, 'data') });
    try {
      expect(harness.host.list().map((p) => p.name)).toEqual([
        'llm-scripted',
        'llm-openai',
        'llm-anthropic',
        'llm-retry',
        'token-meter',
        'compaction',
        'tools-workspace',
        'approvals',
        'journal-postgres',
      ]);
      expect(harness.config.defaults).toEqual(DEFAULT_DEFAULTS);
      const call = await harness.llm.prepareCall({ provider: DEFAULT_DEFAULTS.provider, model: DEFAULT_DEFAULTS.model });
      expect(call.model).toMatchObject({ id: 'scripted-default' });
    } finally {
      await harness.dispose();
    }
  });
});
