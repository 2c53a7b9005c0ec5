/**
 * `harness-runtime/stack`: the built-in plugin stack, for a config that starts from it and changes
 * only what it names. It lives outside `runtime/` (the runtime knows no plugin) and names each
 * plugin by the absolute path of its module, so `harness dev` hot-reloads them like any other.
 *
 * ```ts
 * import { defineConfig } from 'harness-runtime';
 * import { defaultPlugins, DEFAULT_DEFAULTS } from 'harness-runtime/stack';
 *
 * export default defineConfig({
 *   defaults: DEFAULT_DEFAULTS,                                   // the scripted model, offline
 *   plugins: [
 *     ...defaultPlugins({
 *       approvals: { default: 'allow-all' },                      // one plugin's config changed
 *       compaction: false,                                        // one plugin left out
 *       providers: { ollama: { api: 'chat', baseURL: 'http://127.0.0.1:11434/v1', apiKeyEnv: false, allowUnknownModels: true } },
 *     }),
 *     { module: './plugins/mine.ts' },                            // and one of the project's own
 *   ],
 * });
 * ```
 *
 * Each option is a plugin's config, merged over the stack's (one level deep: for the model plugins
 * `providers` merge by id, for `tokenMeter` `prices` merge by provider), or `false` to leave the plugin
 * out. The order is the stack's: scripted, openai, anthropic, retry, tokenMeter, compaction, tools,
 * approvals, journalPostgres.
 */
import { fileURLToPath } from 'node:url';
import { closestName, HarnessError, type HarnessConfig, type PluginDefinition, type PluginSpec } from '../runtime/index.ts';

type ConfigOf<Module> = Module extends { default: PluginDefinition<infer Config> } ? Config : never;
/** A plugin's config as an override: its top-level fields optional. */
type Override<Module> = { readonly [K in keyof ConfigOf<Module>]?: ConfigOf<Module>[K] };

type OpenAIRoute = NonNullable<ConfigOf<typeof import('../plugins/llm-openai/index.ts')>['providers']>[string];

export interface StackOptions {
  /** `llm-scripted`: the offline demo model (provider `scripted`, model `scripted-default`). */
  readonly scripted?: Override<typeof import('../plugins/llm-scripted/index.ts')> | false;
  /**
   * `llm-openai`: providers `openai` and `deepseek` (keys from OPENAI_API_KEY / DEEPSEEK_API_KEY, read
   * per call) and `openai-compatible` (a Chat Completions server at OPENAI_COMPATIBLE_BASE_URL, no key needed).
   */
  readonly openai?: Override<typeof import('../plugins/llm-openai/index.ts')> | false;
  /** `llm-anthropic`: provider `anthropic` (key from ANTHROPIC_API_KEY). */
  readonly anthropic?: Override<typeof import('../plugins/llm-anthropic/index.ts')> | false;
  /** `llm-retry`: the one retry layer. */
  readonly retry?: Override<typeof import('../plugins/llm-retry/index.ts')> | false;
  /** `token-meter`: usage and cost, with prices per provider and model. */
  readonly tokenMeter?: Override<typeof import('../plugins/token-meter/index.ts')> | false;
  /** `compaction`: summarises older turns when the context fills up. */
  readonly compaction?: Override<typeof import('../plugins/compaction/index.ts')> | false;
  /** `tools-workspace`: read_file, write_file, edit_file, list_dir, grep, exec_command. */
  readonly tools?: Override<typeof import('../plugins/tools-workspace/index.ts')> | false;
  /** `approvals`: the `--approve` policies (default `read-only`). */
  readonly approvals?: Override<typeof import('../plugins/approvals/index.ts')> | false;
  /**
   * `journal-postgres`: makes `store: 'postgres://…'` (and `--store postgres://…`) usable. It costs
   * nothing until such a store is opened (the `pg` driver is loaded then).
   */
  readonly journalPostgres?: Override<typeof import('../plugins/journal-postgres/index.ts')> | false;
  /**
   * More OpenAI-compatible providers (Ollama, vLLM, OpenRouter, a gateway), served by `llm-openai`
   * beside `openai` and `deepseek`: one entry each, e.g.
   * `{ ollama: { api: 'chat', baseURL: 'http://127.0.0.1:11434/v1', apiKeyEnv: false, allowUnknownModels: true } }`.
   */
  readonly providers?: Readonly<Record<string, OpenAIRoute>>;
}

/** The system prompt of the built-in defaults. */
export const DEFAULT_SYSTEM = [
  "You are a careful coding agent working in the user's workspace through the tools you are given.",
  'Look before you act: list and read files before changing them, and keep changes small.',
  'Answer briefly and concretely; say what you did and what you found.',
].join(' ');

/** The built-in call defaults: the scripted model (offline, no key) with {@link DEFAULT_SYSTEM}. */
export const DEFAULT_DEFAULTS = Object.freeze({ provider: 'scripted', model: 'scripted-default', system: DEFAULT_SYSTEM });

/** USD per million tokens, per usage class (reasoning is priced as output). */
const PRICES = {
  openai: {
    'gpt-5.5': { inputTokens: 1.25, cacheReadTokens: 0.125, outputTokens: 10 },
    'gpt-5.4': { inputTokens: 1.25, cacheReadTokens: 0.125, outputTokens: 10 },
    'gpt-5.4-mini': { inputTokens: 0.25, cacheReadTokens: 0.025, outputTokens: 2 },
    'gpt-5.1': { inputTokens: 1.25, cacheReadTokens: 0.125, outputTokens: 10 },
    'gpt-5': { inputTokens: 1.25, cacheReadTokens: 0.125, outputTokens: 10 },
    'gpt-5-mini': { inputTokens: 0.25, cacheReadTokens: 0.025, outputTokens: 2 },
    'gpt-4.1': { inputTokens: 2, cacheReadTokens: 0.5, outputTokens: 8 },
    'gpt-4o': { inputTokens: 2.5, cacheReadTokens: 1.25, outputTokens: 10 },
  },
  deepseek: {
    'deepseek-chat': { inputTokens: 0.27, cacheReadTokens: 0.07, outputTokens: 1.1 },
    'deepseek-reasoner': { inputTokens: 0.55, cacheReadTokens: 0.14, outputTokens: 2.19 },
  },
  anthropic: {
    'claude-opus-5-5': { inputTokens: 15, cacheReadTokens: 1.5, cacheWriteTokens: 18.75, outputTokens: 75 },
    'claude-sonnet-5-5': { inputTokens: 3, cacheReadTokens: 0.3, cacheWriteTokens: 3.75, outputTokens: 15 },
    'claude-haiku-5-5': { inputTokens: 1, cacheReadTokens: 0.1, cacheWriteTokens: 1.25, outputTokens: 5 },
    'claude-haiku-4-5': { inputTokens: 1, cacheReadTokens: 0.1, cacheWriteTokens: 1.25, outputTokens: 5 },
  },
  // The scripted model is free; pricing it at 0 makes the footer say so.
  scripted: { '*': { inputTokens: 0, outputTokens: 0 } },
};

/** Only the keys whose value is given, so a plugin's built-in route settings stay in force. */
const baseURL = (variable: string): { baseURL?: string } => {
  const value = process.env[variable];
  return value ? { baseURL: value } : {};
};

/**
 * `openai-compatible`: any server that speaks OpenAI's Chat Completions API (vLLM, llama.cpp,
 * Ollama, LM Studio, a gateway). `OPENAI_COMPATIBLE_BASE_URL` is its `/v1` URL (default Ollama's,
 * http://127.0.0.1:11434/v1); `OPENAI_COMPATIBLE_API_KEY` is sent only when set (a local server
 * needs none); any model id is taken, and `OPENAI_COMPATIBLE_MODEL` names the one used when a call
 * names none.
 */
function openaiCompatibleRoute(): Record<string, unknown> {
  const model = process.env.OPENAI_COMPATIBLE_MODEL;
  return {
    api: 'chat',
    label: 'OpenAI-compatible server',
    baseURL: process.env.OPENAI_COMPATIBLE_BASE_URL || 'http://127.0.0.1:11434/v1',
    apiKeyEnv: process.env.OPENAI_COMPATIBLE_API_KEY ? 'OPENAI_COMPATIBLE_API_KEY' : false,
    allowUnknownModels: true,
    ...(model ? { models: [{ id: model }] } : {}),
  };
}

/** The absolute path of a shipped plugin's module (`.ts` in a source checkout, `.js` when built). */
export function pluginModule(name: string): string {
  const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  return fileURLToPath(new URL(`../plugins/${name}/index.${extension}`, import.meta.url));
}

type Entry = readonly [option: keyof Omit<StackOptions, 'providers'>, plugin: string, config: Record<string, unknown>, deep?: string];

/** The options {@link defaultPlugins} takes: a misspelt one would otherwise be ignored without a word. */
const STACK_OPTIONS: readonly (keyof StackOptions)[] = ['scripted', 'openai', 'anthropic', 'retry', 'tokenMeter', 'compaction', 'tools', 'approvals', 'journalPostgres', 'providers'];

/** @throws HarnessError `INVALID_CONFIG` for an option {@link defaultPlugins} does not know, with "did you mean". */
function checkOptions(options: StackOptions): void {
  const unknown = Object.keys(options ?? {}).filter((key) => !(STACK_OPTIONS as readonly string[]).includes(key));
  if (unknown.length === 0) return;
  const named = unknown.map((key) => {
    const suggestion = closestName(key, STACK_OPTIONS);
    return `"${key}"${suggestion ? ` (did you mean \`${suggestion}\`?)` : ''}`;
  });
  throw new HarnessError(
    'INVALID_CONFIG',
    `defaultPlugins() has no option ${named.join(', ')}. Its options are the built-in plugins (${STACK_OPTIONS.filter((key) => key !== 'providers').join(', ')}: each a config or false) and providers.`,
    { details: { unknownKeys: unknown } },
  );
}

/**
 * The built-in stack as plugin entries, with `options` applied (see the module docstring). Base URLs
 * of the built-in providers follow `OPENAI_BASE_URL`, `DEEPSEEK_BASE_URL`, `ANTHROPIC_BASE_URL` when set.
 * @throws HarnessError `INVALID_CONFIG` for an option it does not know (`aprovals`: did you mean `approvals`?).
 */
export function defaultPlugins(options: StackOptions = {}): PluginSpec[] {
  checkOptions(options);
  const entries: Entry[] = [
    ['scripted', 'llm-scripted', { paceMs: 12 }],
    [
      'openai',
      'llm-openai',
      { providers: { openai: { ...baseURL('OPENAI_BASE_URL') }, deepseek: { ...baseURL('DEEPSEEK_BASE_URL') }, 'openai-compatible': openaiCompatibleRoute(), ...options.providers } },
      'providers',
    ],
    ['anthropic', 'llm-anthropic', { providers: { anthropic: { ...baseURL('ANTHROPIC_BASE_URL') } } }, 'providers'],
    ['retry', 'llm-retry', { maxRetries: 3 }],
    ['tokenMeter', 'token-meter', { prices: PRICES }, 'prices'],
    ['compaction', 'compaction', { reserveTokens: 16_000, keepTurns: 2 }],
    // read_file, write_file, edit_file, list_dir, grep: confined to the session's workspace (--cwd; `..` and
    // symlinks that lead out are refused). exec_command runs `bash -c` IN the workspace directory, but a shell
    // can reach anything the user can — it is not confined; the approval policy is what guards it.
    ['tools', 'tools-workspace', {}],
    ['approvals', 'approvals', { default: 'read-only' }],
    ['journalPostgres', 'journal-postgres', {}],
  ];
  const plugins: PluginSpec[] = [];
  for (const [option, plugin, base, deep] of entries) {
    const given = options[option] as Record<string, unknown> | false | undefined;
    if (given === false) {
      if (option === 'openai' && options.providers) throw new TypeError('defaultPlugins: `providers` are served by llm-openai, which `openai: false` leaves out.');
      continue;
    }
    const config: Record<string, unknown> = { ...base, ...given };
    if (deep && given?.[deep] !== undefined) config[deep] = { ...(base[deep] as object), ...(given[deep] as object) };
    plugins.push({ module: pluginModule(plugin), config });
  }
  return plugins;
}

/**
 * The built-in config: {@link DEFAULT_DEFAULTS} and {@link defaultPlugins}. What the `harness`
 * command loads when no config file is found.
 */
export function defaultConfig(options: StackOptions = {}): HarnessConfig {
  return { defaults: DEFAULT_DEFAULTS, plugins: defaultPlugins(options) };
}
