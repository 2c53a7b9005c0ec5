/**
 * Config of the `llm-anthropic` plugin: one route per provider id, validated with zod.
 *
 * ```ts
 * { module: './plugins/llm-anthropic/index.ts', config: {
 *     providers: { anthropic: { idleTimeoutMs: 60_000 } } } }
 * ```
 *
 * - Without `providers`, the built-in route `anthropic` (https://api.anthropic.com,
 *   `ANTHROPIC_API_KEY`) is served. With it, exactly the listed ids are served; the id `anthropic`
 *   inherits the built-in settings field by field (a given `models` list replaces the catalog);
 *   other ids (a proxy, a gateway) need a `baseURL`, and their key variable defaults to `<ID>_API_KEY`.
 * - The key is read per call: a missing key fails the call with `AUTH`, never the plugin load.
 * - `headers`: extra HTTP headers sent with every request of the route (e.g. a gateway's own key).
 * - `idleTimeoutMs` (ms, default 120000): no SSE event for that long → `TIMEOUT`.
 * - A model's `thinking` says how `reasoningEffort` maps: `budget` (the default: `thinking: { type:
 *   'enabled', budget_tokens }`, efforts minimal/low/medium/high/max = 1024/2048/8192/24576/32000
 *   tokens, or the model's `thinkingBudgets`) or `adaptive` (`thinking: { type: 'adaptive' }` +
 *   `output_config: { effort }`; such models may think without being asked). The effort `off` (or
 *   `none`), when a catalog lists it, sends `thinking: { type: 'disabled' }`.
 */
import { z, type AdapterDefaults, type ModelInfo } from '../../runtime/index.ts';

const modelSchema = z
  .object({
    id: z.string().min(1, 'a model needs a non-empty id'),
    label: z.string().optional(),
    contextWindow: z.number().int().positive().optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    reasoningEfforts: z.array(z.string().min(1)).optional(),
    defaultReasoningEffort: z.string().min(1).optional(),
    inputModalities: z.array(z.enum(['text', 'image', 'file'])).optional(),
    thinking: z.enum(['budget', 'adaptive']).optional(),
    thinkingBudgets: z.record(z.string(), z.number().int().min(1024, 'a thinking budget is at least 1024 tokens')).optional(),
  })
  .strict()
  .refine((model) => model.defaultReasoningEffort === undefined || (model.reasoningEfforts ?? []).includes(model.defaultReasoningEffort), {
    message: 'defaultReasoningEffort must be one of the model\'s reasoningEfforts',
    path: ['defaultReasoningEffort'],
  });

export type AnthropicModelConfig = z.output<typeof modelSchema>;

/** Extra HTTP headers: names are HTTP tokens, values single-line. */
const headersSchema = z.record(z.string(), z.string()).superRefine((headers, ctx) => {
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: `header name "${name}" is not an HTTP token (letters, digits, -)` });
    if (/[\r\n]/.test(value)) ctx.addIssue({ code: 'custom', path: [name], message: 'header values cannot contain line breaks' });
  }
});

const routeSchema = z
  .object({
    label: z.string().optional(),
    baseURL: z.url({ message: 'baseURL must be an absolute URL, e.g. https://api.anthropic.com' }).optional(),
    apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'apiKeyEnv must be an environment variable name, e.g. ANTHROPIC_API_KEY').optional(),
    idleTimeoutMs: z.number().int().positive().optional(),
    headers: headersSchema.optional(),
    allowUnknownModels: z.boolean().optional(),
    defaults: z
      .object({ temperature: z.number().min(0).max(1).optional(), maxTokens: z.number().int().positive().optional(), reasoningEffort: z.string().min(1).optional() })
      .strict()
      .optional(),
    models: z.array(modelSchema).optional(),
  })
  .strict();

type RouteConfig = z.output<typeof routeSchema>;

export const anthropicConfigSchema = z
  .object({ providers: z.record(z.string().min(1, 'provider ids must be non-empty'), routeSchema).optional() })
  .strict()
  .superRefine((config, ctx) => {
    for (const [provider, route] of Object.entries(config.providers ?? {})) {
      const path = ['providers', provider];
      const builtin = BUILTIN_ROUTES[provider];
      if (builtin === undefined && route.baseURL === undefined) {
        ctx.addIssue({ code: 'custom', path: [...path, 'baseURL'], message: `provider "${provider}" is not built in: give its baseURL` });
      }
      const models = route.models ?? builtin?.models ?? [];
      if (models.length === 0 && route.allowUnknownModels !== true) {
        ctx.addIssue({ code: 'custom', path: [...path, 'models'], message: `provider "${provider}" lists no models: add { id } entries to models, or set allowUnknownModels: true` });
      }
      const seen = new Set<string>();
      models.forEach((model, index) => {
        if (seen.has(model.id)) ctx.addIssue({ code: 'custom', path: [...path, 'models', index, 'id'], message: `model "${model.id}" is listed twice` });
        seen.add(model.id);
      });
    }
  });

export type AnthropicPluginConfig = z.output<typeof anthropicConfigSchema>;

/** A model with its thinking mapping. */
export interface AnthropicModel extends ModelInfo {
  readonly thinking?: 'budget' | 'adaptive';
  readonly thinkingBudgets?: Readonly<Record<string, number>>;
}

export interface AnthropicRoute {
  readonly provider: string;
  readonly label: string;
  readonly baseURL: string;
  readonly apiKeyEnv: string;
  /** ms */
  readonly idleTimeoutMs: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly allowUnknownModels: boolean;
  readonly defaults?: AdapterDefaults;
  readonly models: readonly AnthropicModel[];
  readonly modelsById: ReadonlyMap<string, AnthropicModel>;
}

const EFFORTS = ['low', 'medium', 'high'];
const MEDIA: ModelInfo['inputModalities'] = ['text', 'image', 'file'];

/**
 * Anthropic's current catalog (context window and max output in tokens). The 5.5 models think
 * adaptively (`output_config.effort`); Haiku 4.5 takes a thinking budget.
 */
export const ANTHROPIC_MODELS: readonly AnthropicModel[] = [
  { id: 'claude-opus-5-5', label: 'Claude Opus 5.5', contextWindow: 1_000_000, maxOutputTokens: 128_000, reasoningEfforts: EFFORTS, inputModalities: MEDIA, thinking: 'adaptive' },
  { id: 'claude-sonnet-5-5', label: 'Claude Sonnet 5.5', contextWindow: 1_000_000, maxOutputTokens: 128_000, reasoningEfforts: EFFORTS, inputModalities: MEDIA, thinking: 'adaptive' },
  { id: 'claude-haiku-5-5', label: 'Claude Haiku 5.5', contextWindow: 1_000_000, maxOutputTokens: 128_000, reasoningEfforts: EFFORTS, inputModalities: MEDIA, thinking: 'adaptive' },
  { id: 'claude-haiku-4-5', label: 'Claude Haiku 4.5', contextWindow: 200_000, maxOutputTokens: 64_000, reasoningEfforts: EFFORTS, inputModalities: MEDIA, thinking: 'budget' },
];

export const BUILTIN_ROUTES: Record<string, RouteConfig> = {
  anthropic: { label: 'Anthropic', baseURL: 'https://api.anthropic.com', apiKeyEnv: 'ANTHROPIC_API_KEY', models: ANTHROPIC_MODELS as RouteConfig['models'] },
};

export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;

export function resolveRoutes(config: AnthropicPluginConfig): AnthropicRoute[] {
  const entries = config.providers === undefined ? Object.keys(BUILTIN_ROUTES).map((id) => [id, {}] as const) : Object.entries(config.providers);
  return entries.map(([provider, given]) => {
    const route: RouteConfig = { ...(BUILTIN_ROUTES[provider] ?? {}), ...stripUndefined(given) };
    const models = (route.models ?? []).map(freezeModel);
    return Object.freeze({
      provider,
      label: route.label ?? provider,
      baseURL: route.baseURL!,
      apiKeyEnv: route.apiKeyEnv ?? `${provider.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}_API_KEY`,
      idleTimeoutMs: route.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
      ...(route.headers ? { headers: Object.freeze({ ...route.headers }) } : {}),
      allowUnknownModels: route.allowUnknownModels ?? false,
      ...(route.defaults ? { defaults: Object.freeze({ ...route.defaults }) } : {}),
      models: Object.freeze(models),
      modelsById: new Map(models.map((model) => [model.id, model])),
    });
  });
}

function freezeModel(model: AnthropicModelConfig | AnthropicModel): AnthropicModel {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(model)) {
    if (value === undefined) continue;
    out[key] = Array.isArray(value) ? Object.freeze([...value]) : typeof value === 'object' && value !== null ? Object.freeze({ ...value }) : value;
  }
  return Object.freeze(out) as unknown as AnthropicModel;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = item;
  return out as Partial<T>;
}
