/**
 * A plugin whose every generation publishes weak references to what its setup made — the adapter
 * instance, a zod schema, an `llm/stream` middleware, a `session/event` listener, a tool, a timer
 * and the context itself — so that a test can see whether a replaced generation is collectable.
 * Module-level values are not published: Node's ESM loader never frees a module record, so those of
 * every generation stay by design.
 */
import { defineTool, definePlugin, LlmAdapter, z, type GenerateOptions, type StreamChunk } from '../../../runtime/index.ts';

/** Per generation (in setup order), its weak references by name. */
export type Generations = { readonly refs: Readonly<Record<string, WeakRef<object>>> }[];
const GENERATIONS = Symbol.for('harness.test.collectable-generations');

class CollectableAdapter extends LlmAdapter {
  override readonly replayFormat = { kind: 'collectable', version: 1 } as const;
  listModels() {
    return [{ id: 'm' }];
  }
  override validateReplayState(): string | undefined {
    return undefined;
  }
  async *stream(_options: GenerateOptions): AsyncGenerator<StreamChunk> {
    yield { type: 'block-start', index: 0, blockType: 'text' };
    yield { type: 'text-delta', index: 0, text: 'ok' };
    yield { type: 'block-end', index: 0 };
    yield { type: 'usage', usage: { inputTokens: 3, outputTokens: 1 } };
    yield { type: 'finish', finish: { kind: 'stop' }, replayState: { response: { kind: 'collectable', version: 1 }, blocks: [null] } };
  }
}

export default definePlugin({
  name: 'collectable',
  setup(ctx) {
    const generations = ((globalThis as { [GENERATIONS]?: Generations })[GENERATIONS] ??= []);
    const adapter = new CollectableAdapter();
    ctx.llm.registerAdapter(['collectable'], adapter);
    const schema = z.object({ text: z.string() });
    const middleware = (options: GenerateOptions, next: (options?: GenerateOptions) => AsyncIterable<StreamChunk>) => next(options);
    ctx.on('llm/stream', middleware);
    const listener = () => undefined;
    ctx.on('session/event', listener);
    const tool = defineTool({ name: 'echo', description: 'Echoes its text.', input: schema, permission: 'read', execute: ({ text }) => text });
    ctx.tools.register(tool);
    const timer = setInterval(() => undefined, 60_000);
    ctx.onDispose(() => clearInterval(timer));
    generations.push({ refs: Object.fromEntries(Object.entries({ adapter, schema, middleware, listener, tool, timer, ctx }).map(([name, value]) => [name, new WeakRef(value as object)])) });
  },
});

/** The generations published so far. */
export function generations(): Generations {
  return (globalThis as { [GENERATIONS]?: Generations })[GENERATIONS] ?? [];
}
