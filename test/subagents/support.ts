/** Harnesses for the subagent tests: the scripted model, approvals, token meter and the subagents plugin. */
import { join } from 'node:path';
import { defineTool, readJournal, readJournalHeader, z, type AnySessionEvent, type Harness, type SessionHeader } from '../../runtime/index.ts';
import { plugin, scriptedHarness, type JsonScriptLike } from '../agent/support.ts';

export { collect, ofType, plugin } from '../agent/support.ts';

/**
 * Parent (prompt "delegate"): step 1 calls run_subagent, step 2 answers PARENT_DONE.
 * Child (prompt "child task"): step 1 pokes a value (a write tool: asked), step 2 answers CHILD_OK.
 */
export const delegation: JsonScriptLike = {
  replies: [
    { when: { userIncludes: 'child task', step: 1 }, reply: { text: 'Poking.', toolCalls: [{ name: 'poke', arguments: { key: 'b', value: '1' } }], usage: { inputTokens: 40, outputTokens: 7 } } },
    { when: { userIncludes: 'child task', step: 2 }, reply: { text: 'CHILD_OK', usage: { inputTokens: 60, outputTokens: 3 } } },
    {
      when: { userIncludes: 'delegate', step: 1 },
      reply: { text: 'Delegating.', toolCalls: [{ name: 'run_subagent', arguments: { prompt: 'child task: poke b', description: 'poke b' } }], usage: { inputTokens: 100, outputTokens: 20 } },
    },
    { when: { userIncludes: 'delegate', step: 2 }, reply: { text: 'PARENT_DONE', usage: { inputTokens: 150, outputTokens: 5 } } },
  ],
};

export async function subagentHarness(script: JsonScriptLike, options: { maxDepth?: number; ran?: string[] } = {}): Promise<Harness & { dir: string }> {
  const ran = options.ran ?? [];
  return await scriptedHarness(script, {
    plugins: [{ module: plugin('token-meter') }, { module: plugin('subagents'), ...(options.maxDepth !== undefined ? { config: { maxDepth: options.maxDepth } } : {}) }],
    tools: [
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
      defineTool({
        name: 'wait',
        description: 'Waits until aborted.',
        input: z.object({}),
        permission: 'read',
        timeoutMs: 0,
        execute: (_input, context) => new Promise<string>((resolve) => context.signal.addEventListener('abort', () => resolve('stopped'), { once: true })),
      }),
    ],
  });
}

export function journalOf(harness: Harness, id: string): string {
  return join(harness.dataDir, 'sessions', `${id}.jsonl`);
}

export async function readAll(path: string): Promise<{ header: SessionHeader; events: AnySessionEvent[] }> {
  const events: AnySessionEvent[] = [];
  for await (const event of readJournal(path)) events.push(event);
  return { header: await readJournalHeader(path), events };
}
