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
import { checkCatalog, modelEntrySchema, overlayRoute, resolveRouteFields, routeFields, z, type ModelInfo, type ResolvedRouteFields } from '../../runtime/index.ts';

const routeSchema = z.strictObject({
  ...routeFields({ model: modelEntrySchema(), baseURLExample: 'https://api.openai.com/v1', apiKeyEnvExample: 'OPENAI_API_KEY', maxTemperature: 2 }),
  api: z.enum(['chat', 'responses']).optional(),
  compat: z.enum(['openai', 'deepseek', 'xai', 'generic']).optional(),
  store: z.boolean().optional(),
  reasoningSummary: z.enum(['auto', 'concise', 'detailed', 'none']).optional(),
});

export type RouteConfig = z.output<typeof routeSchema>;

export const openaiConfigSchema = z
  .strictObject({
    providers: z.record(z.string().min(1, 'provider ids must be non-empty'), routeSchema).optional(),
  })
  .superRefine((config, ctx) => {
    for (const [provider, route] of Object.entries(config.providers ?? {})) {
      const merged = overlayRoute(BUILTIN_ROUTES[provider], route);
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
      checkCatalog(ctx, path, provider, merged.models ?? [], merged.allowUnknownModels);
    }
  });

export type OpenAIPluginConfig = z.output<typeof openaiConfigSchema>;

/** A validated route with every default applied. */
export interface OpenAIRoute extends ResolvedRouteFields<ModelInfo> {
  readonly api: 'chat' | 'responses';
  readonly compat: 'openai' | 'deepseek' | 'xai' | 'generic';
  readonly store: boolean;
  readonly reasoningSummary: 'auto' | 'concise' | 'detailed' | 'none';
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

/** The routes a validated config serves, defaults applied. */
export function resolveRoutes(config: OpenAIPluginConfig): OpenAIRoute[] {
  const entries = config.providers === undefined ? Object.keys(BUILTIN_ROUTES).map((id) => [id, {}] as const) : Object.entries(config.providers);
  return entries.map(([provider, given]) => {
    const route = overlayRoute<RouteConfig>(BUILTIN_ROUTES[provider], given);
    return Object.freeze({
      ...resolveRouteFields<ModelInfo>(provider, route),
      api: route.api ?? 'chat',
      compat: route.compat ?? (provider === 'openai' ? 'openai' : 'generic'),
      store: route.store ?? false,
      reasoningSummary: route.reasoningSummary ?? 'auto',
    });
  });
}
