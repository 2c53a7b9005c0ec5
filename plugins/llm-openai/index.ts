/**
 * `llm-openai`: OpenAI and OpenAI-compatible providers as `ctx.llm` routes.
 *
 * Routes with `api: 'chat'` are served by {@link OpenAIChatAdapter} (kind `openai-chat`), routes with
 * `api: 'responses'` by {@link OpenAIResponsesAdapter} (kind `openai-responses`); each kind is one
 * registration. Defaults: `openai` (Responses API, `OPENAI_API_KEY`) and `deepseek` (chat,
 * https://api.deepseek.com, `DEEPSEEK_API_KEY`). Config: see config.ts; adapter behaviour: see the
 * docstrings of chat.ts and responses.ts. Loading never needs an API key: a missing key fails the
 * call with `AUTH`. SDK clients are made lazily per route, with the SDK's own retries off.
 */
import { definePlugin } from '../../runtime/index.ts';
import { OpenAIChatAdapter } from './chat.ts';
import { openaiConfigSchema, resolveRoutes } from './config.ts';
import { OpenAIResponsesAdapter } from './responses.ts';

export { OpenAIChatAdapter } from './chat.ts';
export { OpenAIResponsesAdapter } from './responses.ts';
export type { OpenAIPluginConfig, OpenAIRoute } from './config.ts';

export default definePlugin({
  name: 'llm-openai',
  config: openaiConfigSchema,
  setup(ctx, config) {
    const routes = resolveRoutes(config);
    const chat = routes.filter((route) => route.api === 'chat');
    const responses = routes.filter((route) => route.api === 'responses');
    if (chat.length > 0)
      ctx.llm.registerAdapter(
        chat.map((route) => route.provider),
        new OpenAIChatAdapter(chat),
      );
    if (responses.length > 0)
      ctx.llm.registerAdapter(
        responses.map((route) => route.provider),
        new OpenAIResponsesAdapter(responses),
      );
  },
});
