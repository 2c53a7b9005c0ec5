/**
 * Config of the `llm-openai` plugin: one route per provider id, validated with zod.
 *
 * ```ts
 * { module: './plugins/llm-openai/index.ts', config: {
 *     providers: {
 *       openai:   {},                                        // built-in: Responses API, OPENAI_API_KEY
 *       deepseek: { idleTimeoutMs: 60_000 },                 // built-in: chat, https://api.deepseek.com
 *       groq:     { api: 'chat', baseURL: 'https://api.groq.com/openai/v1', allowUnknownModels: true },
 *     } } }
 * ```
 *
 * - Without `providers`, the built-in routes `openai` and `deepseek` are served. With it, exactly the
 *   listed ids are served; an id that names a built-in route inherits its settings field by field
 *   (a given `models` list replaces the built-in catalog).
 * - `apiKeyEnv` names the environment variable holding the key (built-ins: `OPENAI_API_KEY`,
 *   `DEEPSEEK_API_KEY`; other ids: `<ID>_API_KEY`, upper-cased, `-`/`.` → `_`). It is read per call: a
 *   missing key fails the call with `AUTH`, never the plugin load.
 * - `compat` (chat routes) switches provider quirks: `openai` (sends `max_completion_tokens`),
 *   `deepseek` (reasoning sent back as `reasoning_content`), `xai` (`completion_tokens` excludes
 *   reasoning), `generic` (any other OpenAI-compatible server; the default for non-built-in chat routes).
 * - `headers`: extra HTTP headers sent with every request of the route (e.g. a gateway's own key).
 * - `idleTimeoutMs` (ms, default 120000): a call with no SSE event for that long fails with `TIMEOUT`.
 * - `allowUnknownModels`: resolve any model id (as `{ id }`) instead of `UNKNOWN_MODEL` (gateways).
 * - `store` / `reasoningSummary` (Responses routes): `store` defaults to false (stateless; reasoning is
 *   replayed from `encrypted_content`); `reasoningSummary` defaults to `auto` (`none` to omit).
 */
import { z, type AdapterDefaults, type ModelInfo } from '../../runtime/index.ts';

export const modelSchema = z
  .object({
    id: z.string().min(1, 'a model needs a non-empty id'),
    label: z.string().optional(),
    contextWindow: z.number().int().positive().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    reasoningEfforts: z.array(z.string().min(1)).optional(),
    defaultReasoningEffort: z.string().min(1).optional(),
    inputModalities: z.array(z.enum(['text', 'image', 'file'])).optional(),
  })
  .strict()
  .refine((model) => model.defaultReasoningEffort === undefined || (model.reasoningEfforts ?? []).includes(model.defaultReasoningEffort), {
    message: 'defaultReasoningEffort must be one of the model\'s reasoningEfforts',
    path: ['defaultReasoningEffort'],
  });

/** Extra HTTP headers: names are HTTP tokens, values single-line. */
const headersSchema = z.record(z.string(), z.string()).superRefine((headers, ctx) => {
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: `header name "${name}" is not an HTTP token (letters, digits, -)` });
    if (/[\r\n]/.test(value)) ctx.addIssue({ code: 'custom', path: [name], message: 'header values cannot contain line breaks' });
  }
});

const routeSchema = z
  .object({
    api: z.enum(['chat', 'responses']).optional(),
    label: z.string().optional(),
    baseURL: z.url({ message: 'baseURL must be an absolute URL, e.g. https://api.openai.com/v1' }).optional(),
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'apiKeyEnv must be an environment variable name, e.g. OPENAI_API_KEY').optional(),
    compat: z.enum(['openai', 'deepseek', 'xai', 'generic']).optional(),
    idleTimeoutMs: z.number().int().positive().optional(),
    headers: headersSchema.optional(),
    allowUnknownModels: z.boolean().optional(),
    store: z.boolean().optional(),
    reasoningSummary: z.enum(['auto', 'concise', 'detailed', 'none']).optional(),
    defaults: z
      .object({ temperature: z.number().min(0).max(2).optional(), maxTokens: z.number().int().positive().optional(), reasoningEffort: z.string().min(1).optional() })
      .strict()
      .optional(),
    models: z.array(modelSchema).optional(),
  })
  .strict();

export type RouteConfig = z.output<typeof routeSchema>;

export const openaiConfigSchema = z
  .object({
    providers: z.record(z.string().min(1, 'provider ids must be non-empty'), routeSchema).optional(),
  })
  .strict()
  .superRefine((config, ctx) => {
    for (const [provider, route] of Object.entries(config.providers ?? {})) {
      const merged = { ...(BUILTIN_ROUTES[provider] ?? {}), ...route };
      const api = merged.api ?? 'chat';
      const path = ['providers', provider];
      if (api === 'responses' && route.compat !== undefined) {
        ctx.addIssue({ code: 'custom', path: [...path, 'compat'], message: `compat applies to api "chat" routes only; provider "${provider}" uses the Responses API` });
      }
      if (api === 'chat' && (route.store !== undefined || route.reasoningSummary !== undefined)) {
        ctx.addIssue({ code: 'custom', path, message: `store and reasoningSummary apply to api "responses" routes only; provider "${provider}" uses api "chat"` });
      }
      if (BUILTIN_ROUTES[provider] === undefined && route.baseURL === undefined) {
        ctx.addIssue({ code: 'custom', path: [...path, 'baseURL'], message: `provider "${provider}" is not built in: give its baseURL (e.g. https://api.groq.com/openai/v1)` });
      }
      const models = merged.models ?? [];
      if (models.length === 0 && merged.allowUnknownModels !== true) {
        ctx.addIssue({ code: 'custom', path: [...path, 'models'], message: `provider "${provider}" lists no models: add { id } entries to models, or set allowUnknownModels: true` });
      }
      const seen = new Set<string>();
      models.forEach((model, index) => {
        if (seen.has(model.id)) ctx.addIssue({ code: 'custom', path: [...path, 'models', index, 'id'], message: `model "${model.id}" is listed twice` });
        seen.add(model.id);
      });
    }
  });

export type OpenAIPluginConfig = z.output<typeof openaiConfigSchema>;

/** A validated route with every default applied. */
export interface OpenAIRoute {
  readonly provider: string;
  readonly api: 'chat' | 'responses';
  readonly label: string;
  readonly baseURL: string;
  readonly apiKeyEnv: string;
  readonly compat: 'openai' | 'deepseek' | 'xai' | 'generic';
  /** ms */
  readonly idleTimeoutMs: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly allowUnknownModels: boolean;
  readonly store: boolean;
  readonly reasoningSummary: 'auto' | 'concise' | 'detailed' | 'none';
  readonly defaults?: AdapterDefaults;
  readonly models: readonly ModelInfo[];
  readonly modelsById: ReadonlyMap<string, ModelInfo>;
}

const IMAGE: ModelInfo['inputModalities'] = ['text', 'image'];
const XHIGH_EFFORTS = ['none', 'low', 'medium', 'high', 'xhigh'];
const GPT51_EFFORTS = ['none', 'low', 'medium', 'high'];
const GPT5_EFFORTS = ['minimal', 'low', 'medium', 'high'];

/** OpenAI's catalog (context window and max output in tokens; an unknown value is left out). */
export const OPENAI_MODELS: readonly ModelInfo[] = [
  { id: 'gpt-5.5', label: 'GPT-5.5', contextWindow: 1_050_000, maxOutputTokens: 128_000, reasoningEfforts: XHIGH_EFFORTS, inputModalities: IMAGE },
  { id: 'gpt-5.4', label: 'GPT-5.4', contextWindow: 1_050_000, maxOutputTokens: 128_000, reasoningEfforts: XHIGH_EFFORTS, inputModalities: IMAGE },
  { id: 'gpt-5.4-mini', label: 'GPT-5.4 mini', reasoningEfforts: ['low', 'medium', 'high', 'xhigh'], inputModalities: IMAGE },
  { id: 'gpt-5.1', label: 'GPT-5.1', contextWindow: 400_000, maxOutputTokens: 128_000, reasoningEfforts: GPT51_EFFORTS, inputModalities: IMAGE },
  { id: 'gpt-5', label: 'GPT-5', contextWindow: 400_000, maxOutputTokens: 128_000, reasoningEfforts: GPT5_EFFORTS, inputModalities: IMAGE },
  { id: 'gpt-5-mini', label: 'GPT-5 mini', contextWindow: 400_000, maxOutputTokens: 128_000, reasoningEfforts: GPT5_EFFORTS, inputModalities: IMAGE },
  { id: 'gpt-4.1', label: 'GPT-4.1', contextWindow: 1_047_576, maxOutputTokens: 32_768, inputModalities: IMAGE },
  { id: 'gpt-4o', label: 'GPT-4o', contextWindow: 128_000, maxOutputTokens: 16_384, inputModalities: IMAGE },
];

/** DeepSeek's catalog: `deepseek-reasoner` always reasons (no effort to choose). */
export const DEEPSEEK_MODELS: readonly ModelInfo[] = [
  { id: 'deepseek-chat', label: 'DeepSeek Chat', contextWindow: 128_000, maxOutputTokens: 8_192, inputModalities: ['text'] },
  { id: 'deepseek-reasoner', label: 'DeepSeek Reasoner', contextWindow: 128_000, maxOutputTokens: 64_000, inputModalities: ['text'] },
];

export const BUILTIN_ROUTES: Record<string, RouteConfig> = {
  openai: { api: 'responses', label: 'OpenAI', baseURL: 'https://api.openai.com/v1', apiKeyEnv: 'OPENAI_API_KEY', models: OPENAI_MODELS as RouteConfig['models'] },
  deepseek: { api: 'chat', label: 'DeepSeek', baseURL: 'https://api.deepseek.com', apiKeyEnv: 'DEEPSEEK_API_KEY', compat: 'deepseek', models: DEEPSEEK_MODELS as RouteConfig['models'] },
};

export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;

/** The routes a validated config serves, defaults applied. */
export function resolveRoutes(config: OpenAIPluginConfig): OpenAIRoute[] {
  const entries = config.providers === undefined ? Object.keys(BUILTIN_ROUTES).map((id) => [id, {}] as const) : Object.entries(config.providers);
  return entries.map(([provider, given]) => {
    const route: RouteConfig = { ...(BUILTIN_ROUTES[provider] ?? {}), ...stripUndefined(given) };
    const api = route.api ?? 'chat';
    const models = (route.models ?? []).map((model) => freezeModel(model));
    return Object.freeze({
      provider,
      api,
      label: route.label ?? provider,
      baseURL: route.baseURL!,
      apiKeyEnv: route.apiKeyEnv ?? `${provider.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}_API_KEY`,
      compat: route.compat ?? (provider === 'openai' ? 'openai' : 'generic'),
      idleTimeoutMs: route.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
      ...(route.headers ? { headers: Object.freeze({ ...route.headers }) } : {}),
      allowUnknownModels: route.allowUnknownModels ?? false,
      store: route.store ?? false,
      reasoningSummary: route.reasoningSummary ?? 'auto',
      ...(route.defaults ? { defaults: Object.freeze({ ...route.defaults }) } : {}),
      models: Object.freeze(models),
      modelsById: new Map(models.map((model) => [model.id, model])),
    });
  });
}

function freezeModel(model: z.output<typeof modelSchema> | ModelInfo): ModelInfo {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(model)) if (value !== undefined) out[key] = Array.isArray(value) ? Object.freeze([...value]) : value;
  return Object.freeze(out) as unknown as ModelInfo;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = item;
  return out as Partial<T>;
}
