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
import { checkCatalog, modelEntrySchema, overlayRoute, resolveRouteFields, routeFields, z, type ModelInfo, type ResolvedRouteFields } from '../../runtime/index.ts';

const modelSchema = modelEntrySchema({
  thinking: z.enum(['budget', 'adaptive']).optional(),
  thinkingBudgets: z.record(z.string(), z.number().int().min(1024, 'a thinking budget is at least 1024 tokens')).optional(),
});

export type AnthropicModelConfig = z.output<typeof modelSchema>;

const routeSchema = z.strictObject(routeFields({ model: modelSchema, baseURLExample: 'https://api.anthropic.com', apiKeyEnvExample: 'ANTHROPIC_API_KEY', maxTemperature: 1 }));

type RouteConfig = z.output<typeof routeSchema>;

export const anthropicConfigSchema = z.strictObject({ providers: z.record(z.string().min(1, 'provider ids must be non-empty'), routeSchema).optional() }).superRefine((config, ctx) => {
  for (const [provider, route] of Object.entries(config.providers ?? {})) {
    const path = ['providers', provider];
    const builtin = BUILTIN_ROUTES[provider];
    if (builtin === undefined && route.baseURL === undefined) {
      ctx.addIssue({ code: 'custom', path: [...path, 'baseURL'], message: `provider "${provider}" is not built in: give its baseURL` });
    }
    const merged = overlayRoute(builtin, route);
    checkCatalog(ctx, path, provider, merged.models ?? [], merged.allowUnknownModels);
  }
});

export type AnthropicPluginConfig = z.output<typeof anthropicConfigSchema>;

/** A model with its thinking mapping. */
export interface AnthropicModel extends ModelInfo {
  readonly thinking?: 'budget' | 'adaptive';
  readonly thinkingBudgets?: Readonly<Record<string, number>>;
}

/** A validated route with every default applied. */
export type AnthropicRoute = ResolvedRouteFields<AnthropicModel>;

const EFFORTS = ['low', 'medium', 'high'];
const MEDIA: ModelInfo['inputModalities'] = ['text', 'image', 'file'];

/**
 * Anthropic's current catalog (context window and max output in tokens). The 5.5 models think
 * adaptively (`output_config.effort`); Haiku 4.5 takes a thinking budget. Sonnet is listed first:
 * the first model is what a call that names none gets (`harness run -p anthropic`), and the
 * mid-priced current model is the sensible default, not the most expensive one.
 */
export const ANTHROPIC_MODELS: readonly AnthropicModel[] = [
  { id: 'claude-sonnet-5-5', label: 'Claude Sonnet 5.5', contextWindow: 1_000_000, maxOutputTokens: 128_000, reasoningEfforts: EFFORTS, inputModalities: MEDIA, thinking: 'adaptive' },
  { id: 'claude-opus-5-5', label: 'Claude Opus 5.5', contextWindow: 1_000_000, maxOutputTokens: 128_000, reasoningEfforts: EFFORTS, inputModalities: MEDIA, thinking: 'adaptive' },
  { id: 'claude-haiku-5-5', label: 'Claude Haiku 5.5', contextWindow: 1_000_000, maxOutputTokens: 128_000, reasoningEfforts: EFFORTS, inputModalities: MEDIA, thinking: 'adaptive' },
  { id: 'claude-haiku-4-5', label: 'Claude Haiku 4.5', contextWindow: 200_000, maxOutputTokens: 64_000, reasoningEfforts: EFFORTS, inputModalities: MEDIA, thinking: 'budget' },
];

export const BUILTIN_ROUTES: Record<string, RouteConfig> = {
  anthropic: { label: 'Anthropic', baseURL: 'https://api.anthropic.com', apiKeyEnv: 'ANTHROPIC_API_KEY', models: ANTHROPIC_MODELS as RouteConfig['models'] },
};

/** The routes a validated config serves, defaults applied. */
export function resolveRoutes(config: AnthropicPluginConfig): AnthropicRoute[] {
  const entries = config.providers === undefined ? Object.keys(BUILTIN_ROUTES).map((id) => [id, {}] as const) : Object.entries(config.providers);
  return entries.map(([provider, given]) => Object.freeze(resolveRouteFields<AnthropicModel>(provider, overlayRoute<RouteConfig>(BUILTIN_ROUTES[provider], given))));
}
