/**
 * prepareCall, call config and retry policy (seed 002 14.3 "prepareCall" and 14.4; issue #3
 * "Deliver 4" and "Deliver 6").
 */
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_POLICY,
  createAssistantMessage,
  isRetryableCode,
  resolveRetryPolicy,
  type AdapterDefaults,
  type GenerateOptions,
  type Harness,
  type LlmCallConfig,
  type ModelInfo,
  type RetryPolicyConfig,
} from '../../runtime/index.ts';
import { callConfigEquals, isAgentLoopRequest, markAgentLoopRequest } from '../../runtime/internal.ts';
import { FakeAdapter, chunk, codeOf, collect, deferred, finishStop, harnessWith, runtimeIndex, tempDir, text, tick } from './support.ts';

let harness: Harness | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const CATALOG: readonly ModelInfo[] = [
  { id: 'gpt-4', contextWindow: 8192, maxOutputTokens: 4096 },
  { id: 'gpt-4o', contextWindow: 128_000, maxOutputTokens: 16_384, reasoningEfforts: ['low', 'high'], defaultReasoningEffort: 'high' },
  { id: 'r1', reasoningEfforts: ['low', 'medium', 'high'] },
];

class CatalogAdapter extends FakeAdapter {
  lookups: string[] = [];
  constructor(
    mode: 'resolve' | 'list' | 'none',
    private readonly adapterDefaults?: AdapterDefaults,
    private readonly retry?: RetryPolicyConfig,
  ) {
    super((options) => [chunk(text(0, `${options.model}`)), chunk(finishStop)]);
    if (mode === 'resolve') {
      this.resolveModel = (provider: string, model: string) => {
        this.lookups.push(`${provider}/${model}`);
        return CATALOG.find((m) => m.id === model);
      };
    }
    if (mode !== 'none') this.listModels = () => CATALOG;
  }
  override defaults(): AdapterDefaults | undefined {
    return this.adapterDefaults;
  }
  override providerRetryPolicy(): RetryPolicyConfig | undefined {
    return this.retry;
  }
}

async function serve(adapter: FakeAdapter, providers = ['fake']): Promise<Harness> {
  harness = await harnessWith();
  harness.ctx.llm.registerAdapter(providers, adapter);
  return harness;
}

function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (!Object.isFrozen(value)) return false;
  return Object.values(value).every(isDeepFrozen);
}

describe('prepareCall: model resolution', () => {
  it('resolves the exact model through resolveModel, with its metadata, frozen', async () => {
    const adapter = new CatalogAdapter('resolve');
    await serve(adapter);
    const prepared = await harness!.llm.prepareCall({ provider: 'fake', model: 'gpt-4o' });
    expect(adapter.lookups).toEqual(['fake/gpt-4o']);
    expect(prepared.model).toEqual(CATALOG[1]);
    expect(prepared.model).not.toBe(CATALOG[1]);
    expect(prepared.config).toEqual({ provider: 'fake', model: 'gpt-4o', reasoningEffort: 'high' });
    expect(prepared.provider).toEqual({ provider: 'fake', kind: 'CatalogAdapter' });
    expect(prepared.defaults).toEqual({});
    expect(prepared.retryPolicy).toEqual(DEFAULT_RETRY_POLICY);
    expect(prepared.registrationId).toBe(harness!.ctx.llm.routes()[0]!.registrationId);
    expect(Object.isFrozen(prepared)).toBe(true);
    for (const part of [prepared.config, prepared.model, prepared.provider, prepared.defaults, prepared.retryPolicy]) expect(isDeepFrozen(part)).toBe(true);
  });

  it('resolves through listModels by exact id only (no prefix, no case folding)', async () => {
    await serve(new CatalogAdapter('list'));
    expect((await harness!.llm.prepareCall({ provider: 'fake', model: 'gpt-4' })).model).toEqual(CATALOG[0]);
    for (const model of ['gpt', 'GPT-4', 'gpt-4o-mini', 'gpt-4 ']) {
      expect(await codeOf(() => harness!.llm.prepareCall({ provider: 'fake', model }))).toBe('UNKNOWN_MODEL');
    }
  });

  it('UNKNOWN_MODEL names the provider, the model and the known models', async () => {
    await serve(new CatalogAdapter('resolve'));
    const error = (await harness!.llm.prepareCall({ provider: 'fake', model: 'nope' }).then(
      () => undefined,
      (e: unknown) => e,
    )) as { code: string; message: string; failure: object };
    expect(error.code).toBe('UNKNOWN_MODEL');
    expect(error.failure).toMatchObject({ provider: 'fake', model: 'nope' });
    expect(error.message).toContain('Known models: gpt-4, gpt-4o, r1.');
  });

  it('an adapter without a catalog takes any model id', async () => {
    await serve(new CatalogAdapter('none'));
    expect((await harness!.llm.prepareCall({ provider: 'fake', model: 'anything' })).model).toEqual({ id: 'anything' });
  });

  it('NO_ADAPTER when no route serves the provider', async () => {
    await serve(new CatalogAdapter('none'));
    expect(await codeOf(() => harness!.llm.prepareCall({ provider: 'other', model: 'x' }))).toBe('NO_ADAPTER');
  });

  it('UNSUPPORTED_REASONING_EFFORT is refused before any request (adapter.stream never called)', async () => {
    const adapter = new CatalogAdapter('resolve');
    await serve(adapter);
    const error = (await harness!.llm.prepareCall({ provider: 'fake', model: 'gpt-4o', reasoningEffort: 'max' }).then(
      () => undefined,
      (e: unknown) => e,
    )) as { code: string; failure: object; message: string };
    expect(error.code).toBe('UNSUPPORTED_REASONING_EFFORT');
    expect(error.failure).toMatchObject({ provider: 'fake', model: 'gpt-4o', reasoningEffort: 'max' });
    expect(error.message).toContain('It accepts: low, high.');
    expect(await codeOf(() => harness!.llm.prepareCall({ provider: 'fake', model: 'gpt-4', reasoningEffort: 'low' }))).toBe('UNSUPPORTED_REASONING_EFFORT');
    expect(adapter.calls).toHaveLength(0);
  });
});

describe('prepareCall: defaults, retry policy, one-shot stream', () => {
  it('applies adapter defaults where the call leaves a field unset; explicit values (also 0) win', async () => {
    await serve(new CatalogAdapter('resolve', { temperature: 0.5, maxTokens: 2048, reasoningEffort: 'low' }));
    const defaulted = await harness!.llm.prepareCall({ provider: 'fake', model: 'gpt-4o' });
    expect(defaulted.config).toEqual({ provider: 'fake', model: 'gpt-4o', reasoningEffort: 'low', temperature: 0.5, maxTokens: 2048 });
    expect(defaulted.defaults).toEqual({ temperature: 0.5, maxTokens: 2048, reasoningEffort: 'low' });
    const explicit = await harness!.llm.prepareCall({ provider: 'fake', model: 'gpt-4o', temperature: 0, maxTokens: 10, reasoningEffort: 'high', stop: ['END'] });
    expect(explicit.config).toEqual({ provider: 'fake', model: 'gpt-4o', reasoningEffort: 'high', temperature: 0, maxTokens: 10, stop: ['END'] });
  });

  it("an adapter's default reasoning effort applies only to models that accept it", async () => {
    await serve(new CatalogAdapter('resolve', { reasoningEffort: 'medium' }));
    // gpt-4 takes no reasoning effort: the provider-wide default does not make the call fail.
    expect((await harness!.llm.prepareCall({ provider: 'fake', model: 'gpt-4' })).config).toEqual({ provider: 'fake', model: 'gpt-4' });
    // gpt-4o accepts low/high only: its own default is used.
    expect((await harness!.llm.prepareCall({ provider: 'fake', model: 'gpt-4o' })).config.reasoningEffort).toBe('high');
    expect((await harness!.llm.prepareCall({ provider: 'fake', model: 'r1' })).config.reasoningEffort).toBe('medium');
  });

  it('resolves the retry policy from defaults < provider < call options, frozen', async () => {
    await serve(new CatalogAdapter('none', undefined, { maxRetries: 2, retryableCodes: ['SERVER'], jitterRatio: undefined }));
    const prepared = await harness!.llm.prepareCall({ provider: 'fake', model: 'm' }, { retryPolicy: { initialDelayMs: 10, mode: 'always' } });
    expect(prepared.retryPolicy).toEqual({ mode: 'always', maxRetries: 2, retryableCodes: ['SERVER'], initialDelayMs: 10, maxDelayMs: 30_000, jitterRatio: 0.2 });
    expect(isDeepFrozen(prepared.retryPolicy)).toBe(true);
  });

  it('stream() is one-shot and requires the prepared config: INVALID_PREPARED_CALL otherwise', async () => {
    const adapter = new CatalogAdapter('resolve', { maxTokens: 100 });
    await serve(adapter);
    const prepared = await harness!.llm.prepareCall({ provider: 'fake', model: 'gpt-4o', stop: ['a'] });
    const base: GenerateOptions = { ...prepared.config, messages: [] };
    for (const changed of [
      { ...base, model: 'gpt-4' },
      { ...base, maxTokens: 101 },
      { ...base, maxTokens: undefined },
      { ...base, reasoningEffort: 'low' },
      { ...base, temperature: 1 },
      { ...base, stop: ['b'] },
      { ...base, stop: undefined },
    ]) {
      expect(await codeOf(() => prepared.stream(changed))).toBe('INVALID_PREPARED_CALL');
    }
    expect(adapter.calls).toHaveLength(0);
    // Non-config fields are free; the first valid stream runs, a second one is refused.
    expect(await collect(prepared.stream({ ...base, system: 'be brief', messages: [] }))).toEqual([text(0, 'gpt-4o'), finishStop]);
    expect(await codeOf(() => prepared.stream(base))).toBe('INVALID_PREPARED_CALL');
    expect(adapter.calls).toHaveLength(1);
  });

  it('a prepared call keeps its registration when the route moves to another adapter', async () => {
    const first = new CatalogAdapter('none');
    harness = await harnessWith();
    const handle = harness.ctx.llm.registerAdapter(['p'], first);
    const p1 = await harness.llm.prepareCall({ provider: 'p', model: 'm' });
    handle.replace([]);
    const second = new FakeAdapter(() => [chunk(text(0, 'second')), chunk(finishStop)]);
    harness.ctx.llm.registerAdapter(['p'], second);
    const p2 = await harness.llm.prepareCall({ provider: 'p', model: 'm' });
    expect(p2.registrationId).not.toBe(p1.registrationId);
    expect(await collect(p1.stream({ ...p1.config, messages: [] }))).toEqual([text(0, 'm'), finishStop]);
    expect(await collect(p2.stream({ ...p2.config, messages: [] }))).toEqual([text(0, 'second'), finishStop]);
    expect(first.calls).toHaveLength(1);
    expect(second.calls).toHaveLength(1);
  });
});

describe('prepareCall across a hot reload', () => {
  it('a prepared call started before a reload finishes on the old generation; the next one uses the new; the old one drains before its plugin is disposed', async () => {
    const state = {
      log: [] as string[],
      gates: new Map<number, ReturnType<typeof deferred>>(),
    };
    (globalThis as Record<string, unknown>).__llmPrepareReloadTest = state;
    const dir = tempDir('llm-prepare-reload');
    cleanups.push(() => dir.cleanup());
    const path = dir.write(
      'gen-plugin.ts',
      `import { definePlugin, LlmAdapter } from ${JSON.stringify(pathToFileURL(runtimeIndex).href)};
const state = (globalThis as any).__llmPrepareReloadTest;
class GenerationAdapter extends LlmAdapter {
  constructor(readonly generation: number) { super(); }
  resolveModel(_provider: string, model: string) { return model === 'm' ? { id: 'm', contextWindow: this.generation * 1000 } : undefined; }
  async *stream() {
    try {
      yield { type: 'text-delta' as const, index: 0, text: 'gen' + this.generation };
      await state.gates.get(this.generation)?.promise;
      yield { type: 'text-delta' as const, index: 0, text: '-done' + this.generation };
      yield { type: 'finish' as const, finish: { kind: 'stop' as const } };
    } finally {
      state.log.push('stream closed ' + this.generation);
    }
  }
}
export default definePlugin({
  name: 'gen-plugin',
  setup(ctx) {
    ctx.onDispose(() => { state.log.push('disposed ' + ctx.plugin.generation); });
    ctx.llm.registerAdapter(['gp'], new GenerationAdapter(ctx.plugin.generation));
  },
});
`,
    );
    harness = await harnessWith();
    await harness.host.load({ module: path });
    const gate1 = deferred();
    state.gates.set(1, gate1);

    const before = await harness.llm.prepareCall({ provider: 'gp', model: 'm' });
    const preparedOnly = await harness.llm.prepareCall({ provider: 'gp', model: 'm' });
    expect(before.model.contextWindow).toBe(1000);
    const running = before.stream({ ...before.config, messages: [] })[Symbol.asyncIterator]();
    expect((await running.next()).value).toEqual(text(0, 'gen1'));

    await harness.host.reload('gen-plugin');
    await tick(5);
    expect(state.log).toEqual([]); // generation 1 still has a stream in flight: not disposed yet

    const after = await harness.llm.prepareCall({ provider: 'gp', model: 'm' });
    expect(after.registrationId).not.toBe(before.registrationId);
    expect(after.model.contextWindow).toBe(2000);
    expect(await collect(after.stream({ ...after.config, messages: [] }))).toEqual([text(0, 'gen2'), text(0, '-done2'), finishStop]);

    gate1.resolve();
    const rest = [];
    for (;;) {
      const step = await running.next();
      if (step.done) break;
      rest.push(step.value);
    }
    expect(rest).toEqual([text(0, '-done1'), finishStop]);
    await tick(5);
    expect(state.log).toEqual(['stream closed 2', 'stream closed 1', 'disposed 1']);

    // A call prepared before the reload keeps the generation it was prepared with.
    expect(await collect(preparedOnly.stream({ ...preparedOnly.config, messages: [] }))).toEqual([text(0, 'gen1'), text(0, '-done1'), finishStop]);
  });
});

describe('call config', () => {
  const configArb: fc.Arbitrary<LlmCallConfig> = fc.record(
    {
      provider: fc.string({ minLength: 1, maxLength: 6 }),
      model: fc.string({ minLength: 1, maxLength: 6 }),
      reasoningEffort: fc.constantFrom('low', 'medium', 'high'),
      temperature: fc.double({ min: 0, max: 2, noNaN: true }),
      maxTokens: fc.nat({ max: 100_000 }),
      stop: fc.array(fc.string({ maxLength: 3 }), { maxLength: 3 }),
    },
    { requiredKeys: ['provider', 'model'] },
  );
  const fields = ['provider', 'model', 'reasoningEffort', 'temperature', 'maxTokens'] as const;

  it('property: callConfigEquals is field-level: equal copies, any one changed field differs, non-config fields ignored', () => {
    fc.assert(
      fc.property(configArb, fc.constantFrom(...fields, 'stop-add', 'stop-change'), (config, change) => {
        const copy = { ...config, stop: config.stop ? [...config.stop] : undefined, messages: [], system: 'x', purpose: 'agent' } as GenerateOptions;
        expect(callConfigEquals(config, copy)).toBe(true);
        expect(callConfigEquals(copy, config)).toBe(true);
        let changed: LlmCallConfig;
        if (change === 'stop-add') changed = { ...config, stop: [...(config.stop ?? []), 'zz'] };
        else if (change === 'stop-change') {
          fc.pre((config.stop?.length ?? 0) > 0);
          changed = { ...config, stop: [`${config.stop![0]}!`, ...config.stop!.slice(1)] };
        } else {
          const value = config[change];
          const other = typeof value === 'number' ? value + 1 : value === undefined ? (change === 'temperature' || change === 'maxTokens' ? 1 : 'set') : `${value}!`;
          changed = { ...config, [change]: other };
        }
        expect(callConfigEquals(config, changed)).toBe(false);
        expect(callConfigEquals(changed, config)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('stop undefined and [] are equal; order of stop sequences counts', () => {
    expect(callConfigEquals({ provider: 'p', model: 'm' }, { provider: 'p', model: 'm', stop: [] })).toBe(true);
    expect(callConfigEquals({ provider: 'p', model: 'm', stop: ['a', 'b'] }, { provider: 'p', model: 'm', stop: ['b', 'a'] })).toBe(false);
    expect(callConfigEquals({ provider: 'p', model: 'm' }, { provider: 'p', model: 'm', temperature: 0 })).toBe(false);
  });

  it('markAgentLoopRequest marks that very object; copies are unmarked', () => {
    const options: GenerateOptions = Object.freeze({ provider: 'p', model: 'm', messages: [] });
    expect(isAgentLoopRequest(options)).toBe(false);
    expect(markAgentLoopRequest(options)).toBe(options);
    expect(isAgentLoopRequest(options)).toBe(true);
    expect(isAgentLoopRequest({ ...options })).toBe(false);
  });

  it('the adapter sees an agent-loop request as one (also when the seam had to copy the options)', async () => {
    const adapter = new FakeAdapter();
    await serve(adapter);
    const plain = markAgentLoopRequest({ provider: 'fake', model: 'm', messages: [] } as GenerateOptions);
    // A message whose replay state this adapter cannot read: the seam sends a copy of the options.
    const foreign = createAssistantMessage({ content: 'hi', provider: 'elsewhere', model: 'x', replayState: { response: { kind: 'k', version: 1 } } });
    const copied = markAgentLoopRequest({ provider: 'fake', model: 'm', messages: [foreign] } as GenerateOptions);
    await collect(harness!.llm.stream(plain));
    await collect(harness!.llm.stream(copied));
    await collect(harness!.llm.stream({ provider: 'fake', model: 'm', messages: [foreign] }));
    expect(adapter.calls[0]).toBe(plain);
    expect(adapter.calls[1]).not.toBe(copied);
    expect(adapter.calls.map(isAgentLoopRequest)).toEqual([true, true, false]);
  });
});

describe('retry policy', () => {
  it('resolveRetryPolicy: defaults, then each layer field by field (undefined skipped), arrays copied, frozen', () => {
    expect(resolveRetryPolicy()).toEqual(DEFAULT_RETRY_POLICY);
    expect(DEFAULT_RETRY_POLICY).toEqual({
      mode: 'normal',
      maxRetries: 4,
      retryableCodes: ['RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT', 'MALFORMED_RESPONSE', 'EMPTY_RESPONSE', 'UNKNOWN'],
      initialDelayMs: 1000,
      maxDelayMs: 30_000,
      jitterRatio: 0.2,
    });
    const codes = ['SERVER'];
    const policy = resolveRetryPolicy({ maxRetries: 1, retryableCodes: codes, maxDelayMs: 5 }, undefined, { maxRetries: 7, maxDelayMs: undefined, jitterRatio: 0 });
    codes.push('AUTH');
    expect(policy).toEqual({ mode: 'normal', maxRetries: 7, retryableCodes: ['SERVER'], initialDelayMs: 1000, maxDelayMs: 5, jitterRatio: 0 });
    expect(isDeepFrozen(policy)).toBe(true);
    expect(Object.isFrozen(DEFAULT_RETRY_POLICY.retryableCodes)).toBe(true);
  });

  it('isRetryableCode: listed codes in normal mode, everything in always mode, but never AUTH or ABORTED', () => {
    const normal = resolveRetryPolicy({ retryableCodes: ['SERVER', 'AUTH', 'ABORTED'] });
    const always = resolveRetryPolicy({ mode: 'always', retryableCodes: [] });
    expect(['SERVER', 'RATE_LIMIT', 'AUTH', 'ABORTED', 'CUSTOM'].map((c) => isRetryableCode(normal, c))).toEqual([true, false, false, false, false]);
    expect(['SERVER', 'RATE_LIMIT', 'AUTH', 'ABORTED', 'CUSTOM', 'INVALID_REQUEST'].map((c) => isRetryableCode(always, c))).toEqual([true, true, false, false, true, true]);
    expect(
      ['RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT', 'MALFORMED_RESPONSE', 'EMPTY_RESPONSE', 'UNKNOWN', 'AUTH', 'QUOTA_EXCEEDED', 'CONTEXT_WINDOW_EXCEEDED'].map((c) =>
        isRetryableCode(DEFAULT_RETRY_POLICY, c),
      ),
    ).toEqual([true, true, true, true, true, true, true, false, false, false]);
  });
});
