/**
 * `llm-anthropic`: Anthropic Messages as `ctx.llm` routes (kind `anthropic`).
 *
 * Default route: `anthropic` (https://api.anthropic.com, `ANTHROPIC_API_KEY`). Config: see config.ts;
 * adapter behaviour (stream mapping, replay state, request serialisation): see adapter.ts; error
 * mapping: see transport.ts. Loading never needs an API key: a missing key fails the call with `AUTH`.
 * The SDK client is made lazily per route, with the SDK's own retries off.
 */
import { definePlugin } from '../../runtime/index.ts';
import { AnthropicAdapter } from './adapter.ts';
import { anthropicConfigSchema, resolveRoutes } from './config.ts';

export { AnthropicAdapter } from './adapter.ts';
export type { AnthropicPluginConfig, AnthropicRoute } from './config.ts';

export default definePlugin({
  name: 'llm-anthropic',
  config: anthropicConfigSchema,
  setup(ctx, config) {
    const routes = resolveRoutes(config);
    if (routes.length > 0)
      ctx.llm.registerAdapter(
        routes.map((route) => route.provider),
        new AnthropicAdapter(routes),
      );
  },
});
