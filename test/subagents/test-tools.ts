/** The tools the subagent scripts call: `poke` (write) and `wait` (until aborted). A plugin module (a config names it). */
import { definePlugin, defineTool, z, type PluginDefinition } from '../../runtime/index.ts';

export function makeTestTools(ran: string[] = []): PluginDefinition<undefined> {
  return definePlugin({
    name: 'test-tools',
    setup(ctx) {
      ctx.tools.register(
        defineTool({
          name: 'poke',
          description: 'Writes a value.',
          input: z.object({ key: z.string(), value: z.string() }),
          permission: 'write',
          execute: ({ key, value }) => {
            ran.push(`poke:${key}=${value}`);
            return `poked ${key}`;
          },
        }),
      );
      ctx.tools.register(
        defineTool({
          name: 'wait',
          description: 'Waits until aborted.',
          input: z.object({}),
          permission: 'read',
          timeoutMs: 0,
          execute: (_input, context) => new Promise<string>((resolve) => context.signal.addEventListener('abort', () => resolve('stopped'), { once: true })),
        }),
      );
    },
  });
}

export default makeTestTools();
