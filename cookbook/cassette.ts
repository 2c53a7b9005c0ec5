/**
 * Cookbook: a journal as a test cassette (plugins/llm-replay).
 * Run: npx tsx cookbook/cassette.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createHarness, type AgentSession, type Harness } from '../runtime/index.ts';

const baseDir = fileURLToPath(new URL('.', import.meta.url));
const workspace = fileURLToPath(new URL('demo-workspace', import.meta.url));
const tools = { module: '../plugins/tools-workspace/index.ts' };

/** The assistant messages' content of a session, from its journal's fold. */
const contents = (session: AgentSession) => session.state.messages.filter((m) => m.role === 'assistant').map((m) => m.content);

export async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-'));
  let recorder: Harness | undefined;
  let player: Harness | undefined;
  try {
    // Record once (here with the scripted model; in practice a real provider, recorded one time).
    recorder = await createHarness({ config: { plugins: [{ module: '../plugins/llm-scripted/index.ts' }, tools] }, baseDir, dataDir });
    const recording = await recorder.createSession({ cwd: workspace });
    await recording.runToEnd('What is in this workspace?', { approve: () => 'allow' });
    const recorded = contents(recording);
    await recorder.dispose();

    // Play it back: llm-replay serves each recorded call's chunks on the route `replay` (an alias, so
    // the provider is not compared; model, tool names and message count are). No key, no network.
    player = await createHarness({
      config: {
        defaults: { provider: 'replay', model: 'scripted-default' },
        plugins: [{ module: '../plugins/llm-replay/index.ts', config: { journal: recording.path, provider: 'replay' } }, tools],
      },
      baseDir,
      dataDir,
    });
    // Notices from the replay route (recorded replay state it does not read, mismatches) come as diagnostics.
    const diagnostics: string[] = [];
    player.ctx.on('kernel/diagnostic', (d) => void diagnostics.push(d.code));
    const replay = await player.createSession({ cwd: workspace });
    const end = await replay.runToEnd('What is in this workspace?', { approve: () => 'allow' });
    const cassette = player.ctx.cassette!;
    cassette.assertConsumed(); // throws CASSETTE_UNCONSUMED if a recorded call was never asked for

    // A request that differs from the recording fails loudly: a different model.
    const stray = await player.createSession({ cwd: workspace });
    cassette.reset();
    const strayEnd = await stray.runToEnd('What is in this workspace?', { approve: () => 'allow', provider: 'replay', model: 'another-model' });
    return {
      calls: cassette.calls.length,
      turnEnd: end.data.reason,
      sameMessages: isDeepStrictEqual(contents(replay), recorded),
      diagnostics: [...new Set(diagnostics)],
      mismatch: { reason: strayEnd.data.reason, code: strayEnd.data.failure?.code, firstLine: strayEnd.data.failure?.message.split('\n')[0] },
    };
  } finally {
    await recorder?.dispose();
    await player?.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
