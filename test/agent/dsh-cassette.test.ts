/**
 * End to end on real input: DeepSeek Harness sessions re-run through llm-replay (the recorded model
 * calls, byte for byte) with our workspace tools in a temporary workspace prepared as each prompt
 * implies. Their tool names are mapped onto ours here, in the test, by alias tools that translate the
 * arguments and run our tools' bodies (ours are not renamed).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, defineTool, importDshSession, z, type AnySessionEvent, type Harness, type ToolDefinition, type UserMessage } from '../../runtime/index.ts';
import { dshRoot } from '../session/support.ts';
import { assertPaired, collect, ofType, plugin, tempDir } from './support.ts';

/** dsh tool name → (our tool, argument translation). */
const ALIASES: Record<string, { ours: string; args: (input: Record<string, unknown>) => Record<string, unknown> }> = {
  read: { ours: 'read_file', args: ({ file_path, offset, limit }) => ({ path: file_path, ...(offset ? { offset } : {}), ...(limit ? { limit } : {}) }) },
  write: { ours: 'write_file', args: ({ file_path, content }) => ({ path: file_path, content }) },
  edit: { ours: 'edit_file', args: ({ file_path, old_string, new_string, replace_all }) => ({ path: file_path, old_string, new_string, ...(replace_all ? { replace_all } : {}) }) },
};

function aliasTools(harness: Harness): ToolDefinition[] {
  return Object.entries(ALIASES).map(([name, alias]) => {
    const ours = harness.tools.require(alias.ours);
    return defineTool({
      name,
      description: `Test alias of ${alias.ours}.`,
      input: z.record(z.string(), z.unknown()),
      permission: ours.permission,
      execute: (input, context) => ours.execute(ours.input.parse(alias.args(input)), context),
    });
  });
}

const SCENARIOS: Record<string, { prepare: (dir: string) => void; check: (dir: string) => void }> = {
  'parallel-tool-calls': {
    prepare: (dir) => {
      writeFileSync(join(dir, 'a.txt'), 'alpha\n');
      writeFileSync(join(dir, 'b.txt'), 'bravo\n');
    },
    check: () => undefined,
  },
  'fs-read': { prepare: (dir) => writeFileSync(join(dir, 'greeting.txt'), 'hello\n'), check: () => undefined },
  'fs-edit': {
    prepare: (dir) => writeFileSync(join(dir, 'config.txt'), 'mode=DEBUG\n'),
    check: (dir) => expect(readFileSync(join(dir, 'config.txt'), 'utf8')).toBe('mode=RELEASE\n'),
  },
  'fs-write': { prepare: () => undefined, check: (dir) => expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('hello world') },
};

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

const modelView = (events: readonly AnySessionEvent[]) =>
  ofType(events, 'assistant/message').map((e) => ({ turn: e.data.turn, step: e.data.step, content: e.data.message.content, source: e.data.message.source, finish: e.data.finish }));

describe('dsh sessions re-run through llm-replay with our workspace tools', () => {
  for (const [scenario, setup] of Object.entries(SCENARIOS)) {
    it(scenario, async () => {
      const journal = join(dshRoot, 'acp-agent', scenario, 'session.jsonl');
      const recorded = (await importDshSession(journal)).events;
      const header = ofType(recorded, 'request/header')[0]!.data.header;
      const dir = tempDir('harness-dsh-');
      const workspace = join(dir, 'workspace');
      mkdirSync(workspace);
      setup.prepare(workspace);
      harness = await createHarness({
        dataDir: join(dir, 'data'),
        config: {
          defaults: { provider: header.config.provider, model: header.config.model },
          plugins: [
            { module: plugin('llm-replay'), config: { journal, provider: header.config.provider } },
            { module: plugin('tools-workspace'), config: { tools: ['read_file', 'write_file', 'edit_file'] } },
          ],
        },
      });
      for (const tool of aliasTools(harness)) harness.ctx.tools.register(tool);
      const session = await harness.createSession({ cwd: workspace });
      // The recorded turn's input: the prompt and the context message their runtime injected.
      const input = ofType(recorded, 'user/message')
        .filter((e) => e.data.turn === 1 || e.data.turn === undefined)
        .map((e) => e.data.message as UserMessage);
      const events = await collect(session.run(input, { approve: () => 'allow' }));

      expect(ofType(events, 'turn/end').map((e) => e.data.reason)).toEqual(['completed']);
      // The loop made the recorded tool calls, in order, and paired every result.
      const calls = (list: readonly AnySessionEvent[]) => ofType(list, 'tool/call').map((e) => [e.data.callId, e.data.name, e.data.arguments]);
      expect(calls(events)).toEqual(calls(recorded));
      expect(calls(events).length).toBeGreaterThan(0);
      const results = ofType(events, 'tool/result');
      expect(results.map((r) => r.data.callId)).toEqual(calls(recorded).map((c) => c[0]));
      expect(results.filter((r) => r.data.message.content[0].isError)).toEqual([]);
      assertPaired(session.state.messages);
      // Every recorded model call was served, and the model's messages are the recorded ones.
      harness.ctx.cassette!.assertConsumed();
      expect(modelView(events)).toEqual(modelView(recorded));
      setup.check(workspace);
    });
  }
});
