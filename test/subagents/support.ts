/** Harnesses for the subagent tests: the scripted model, approvals, token meter and the subagents plugin. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHarness, readJournal, readJournalHeader, type AnySessionEvent, type Harness, type HarnessConfig, type PluginSpec, type SessionHeader } from '../../runtime/index.ts';
import { plugin, tempDir, type JsonScriptLike } from '../agent/support.ts';
import { makeTestTools } from './test-tools.ts';

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

/** The tools the scripts call (test-tools.ts), recording into `ran`. */
export function testTools(ran: string[] = []): PluginSpec {
  return { plugin: makeTestTools(ran) };
}

/** A config: the scripted model serving `script` (a file in `dir`) as scripted/test, approvals, token meter, subagents and the test tools. */
export function subagentConfig(script: JsonScriptLike, dir: string, options: { maxDepth?: number; ran?: string[] } = {}): HarnessConfig {
  const scriptPath = join(dir, 'script.json');
  writeFileSync(scriptPath, JSON.stringify(script));
  return {
    defaults: { provider: 'scripted', model: 'test' },
    plugins: [
      { module: plugin('llm-scripted'), config: { scripts: { test: scriptPath } } },
      { module: plugin('approvals') },
      { module: plugin('token-meter') },
      { module: plugin('subagents'), ...(options.maxDepth !== undefined ? { config: { maxDepth: options.maxDepth } } : {}) },
      testTools(options.ran),
    ],
  };
}

export async function subagentHarness(script: JsonScriptLike, options: { maxDepth?: number; ran?: string[] } = {}): Promise<Harness & { dir: string; config: HarnessConfig }> {
  const dir = tempDir('harness-subagents-');
  const harness = await createHarness({ dataDir: join(dir, 'data'), config: subagentConfig(script, dir, options) });
  return Object.assign(harness, { dir });
}

export function journalOf(harness: Harness, id: string): string {
  return join(harness.dataDir, 'sessions', `${id}.jsonl`);
}

export async function readAll(path: string): Promise<{ header: SessionHeader; events: AnySessionEvent[] }> {
  const events: AnySessionEvent[] = [];
  for await (const event of readJournal(path)) events.push(event);
  return { header: await readJournalHeader(path), events };
}
