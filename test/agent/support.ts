/** Harnesses for loop tests: the scripted model with a JSON script, approvals, and test tools. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createHarness, defineTool, z, type AnySessionEvent, type Harness, type Message, type ToolDefinition } from '../../runtime/index.ts';

export type JsonScriptLike = { replies: { when?: { step?: number; turn?: number; userIncludes?: string; purpose?: string }; reply: Record<string, unknown> }[] };

export const root = resolve(import.meta.dirname, '../..');
export const plugin = (name: string): string => join(root, 'plugins', name, 'index.ts');

export function tempDir(prefix = 'harness-agent-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A harness with the scripted model serving `script` as model `test`, approvals, and extra plugins. */
export async function scriptedHarness(
  script: JsonScriptLike,
  options: { paceMs?: number; plugins?: { module: string; config?: unknown }[]; tools?: ToolDefinition[] } = {},
): Promise<Harness & { dir: string }> {
  const dir = tempDir();
  const scriptPath = join(dir, 'script.json');
  writeFileSync(scriptPath, JSON.stringify(script));
  const harness = await createHarness({
    dataDir: join(dir, 'data'),
    config: {
      defaults: { provider: 'scripted', model: 'test' },
      plugins: [{ module: plugin('llm-scripted'), config: { paceMs: options.paceMs ?? 0, scripts: { test: scriptPath } } }, { module: plugin('approvals') }, ...(options.plugins ?? [])],
    },
  });
  for (const tool of options.tools ?? []) harness.ctx.tools.register(tool);
  return Object.assign(harness, { dir });
}

export async function collect(events: AsyncIterable<AnySessionEvent>, onEvent?: (event: AnySessionEvent) => void): Promise<AnySessionEvent[]> {
  const out: AnySessionEvent[] = [];
  for await (const event of events) {
    out.push(event);
    onEvent?.(event);
  }
  return out;
}

export const ofType = <T extends AnySessionEvent['type']>(events: readonly AnySessionEvent[], type: T) => events.filter((event): event is Extract<AnySessionEvent, { type: T }> => event.type === type);

/** Tools for tests: `peek` (read) and `poke` (write) record that they ran. */
export function recordingTools(ran: string[]): ToolDefinition[] {
  return [
    defineTool({
      name: 'peek',
      description: 'Reads a value.',
      input: z.object({ key: z.string() }),
      permission: 'read',
      execute: ({ key }) => {
        ran.push(`peek:${key}`);
        return `value of ${key}`;
      },
    }),
    defineTool({
      name: 'poke',
      description: 'Writes a value.',
      input: z.object({ key: z.string(), value: z.string() }),
      permission: 'write',
      execute: ({ key, value }) => {
        ran.push(`poke:${key}=${value}`);
        return 'ok';
      },
    }),
  ];
}

/** Every tool call in the surface has exactly one result, right after its assistant message's calls. */
export function assertPaired(messages: readonly Message[]): void {
  const open = new Map<string, number>();
  for (const message of messages) {
    for (const block of message.content) {
      if (block.type === 'tool-call') {
        if (open.has(block.id)) throw new Error(`tool call ${block.id} appears twice`);
        open.set(block.id, 0);
      }
      if (block.type === 'tool-result') {
        if (!open.has(block.toolCallId)) throw new Error(`result for unknown call ${block.toolCallId}`);
        open.set(block.toolCallId, open.get(block.toolCallId)! + 1);
      }
    }
  }
  for (const [id, count] of open) if (count !== 1) throw new Error(`tool call ${id} has ${count} results`);
}
