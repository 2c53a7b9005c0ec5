/**
 * Cookbook: hot-reloading an adapter during a session.
 * Run: npx tsx cookbook/hot-reload.ts
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, messageText, openSession, type SessionEvent } from '../runtime/index.ts';

const runtime = JSON.stringify(fileURLToPath(new URL('../runtime/index.ts', import.meta.url)));

/** The source of a tiny adapter plugin; `greeting` is what this version answers with. */
function echoPluginSource(greeting: string): string {
  return `import { definePlugin, LlmAdapter } from ${runtime};

class EchoAdapter extends LlmAdapter {
  async *stream(options) {
    const last = options.messages.at(-1);
    const said = last?.content.map((block) => (block.type === 'text' ? block.text : '')).join('') ?? '';
    const text = ${JSON.stringify(greeting)} + ' You said: ' + said;
    yield { type: 'block-start', index: 0, blockType: 'text' };
    yield { type: 'text-delta', index: 0, text };
    yield { type: 'block-end', index: 0, block: { type: 'text', text } };
    yield { type: 'finish', finish: { kind: 'stop' } };
  }
}

export default definePlugin({
  name: 'echo-model',
  setup(ctx) {
    ctx.llm.registerAdapter(['echo'], new EchoAdapter());
  },
});
`;
}

export async function main(): Promise<{ replies: string[]; reloads: string[]; turns: number[]; sameJournal: boolean }> {
  const project = mkdtempSync(join(tmpdir(), 'harness-cookbook-reload-'));
  writeFileSync(join(project, 'package.json'), '{ "type": "module" }\n'); // .ts files there are ES modules
  const pluginFile = join(project, 'echo-plugin.ts');
  writeFileSync(pluginFile, echoPluginSource('Hello from v1.'));
  const harness = await createHarness({
    config: { defaults: { provider: 'echo', model: 'any' }, plugins: [{ module: './echo-plugin.ts' }] },
    baseDir: project,
    dataDir: join(project, 'data'),
  });
  const reloads: string[] = [];
  harness.ctx.on('plugin/reloaded', (event) => void reloads.push(`reloaded ${event.name} → generation ${event.generation}`));
  harness.ctx.on('plugin/reload-failed', (event) => void reloads.push(`reload of ${event.name} failed (${event.failure.code}); generation ${event.generation} still serving`));
  try {
    const session = await harness.createSession({ cwd: project });
    const replies: string[] = [];
    const turn = async (prompt: string) => {
      for await (const event of session.run(prompt)) {
        if (event.type === 'assistant/message') replies.push(messageText((event as SessionEvent<'assistant/message'>).data.message));
      }
    };
    await turn('one');
    // Edit the plugin's file and reload it (what `harness dev` does when you save): the live session goes on.
    writeFileSync(pluginFile, echoPluginSource('Hello from v2!'));
    await harness.host.reload('echo-model');
    await turn('two');
    // A broken edit: the reload fails and v2 keeps serving.
    writeFileSync(pluginFile, `${echoPluginSource('Hello from v3')}\nthis is not TypeScript {{\n`);
    await harness.host.reload('echo-model').catch(() => undefined);
    await turn('three');
    const turns = session.state.turnCount;
    const path = session.path;
    await session.close();
    const reread = await openSession(path, { events: true });
    return { replies, reloads, turns: reread.events!.filter((e) => e.type === 'turn/start').map((e) => (e as SessionEvent<'turn/start'>).data.turn), sameJournal: reread.state.turnCount === turns };
  } finally {
    await harness.dispose();
    rmSync(project, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
