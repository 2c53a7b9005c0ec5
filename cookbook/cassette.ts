/**
 * Cookbook: a journal as a regression test of your plugins (a cassette).
 * Run: npx tsx cookbook/cassette.ts — the test file a plugin author writes is cookbook/cassette.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, definePlugin, HarnessError, z, type HarnessConfig } from '../runtime/index.ts';
import { expectCassette } from '../testing/index.ts';

const baseDir = fileURLToPath(new URL('.', import.meta.url));
export const workspace = fileURLToPath(new URL('demo-workspace', import.meta.url));

/** The plugin under test: an `llm/stream` middleware that appends house rules to the system prompt. */
export const houseRules = definePlugin({
  name: 'house-rules',
  config: z.strictObject({ rules: z.array(z.string()).min(1) }),
  setup(ctx, config) {
    ctx.on('llm/stream', (options, next) => next({ ...options, system: `${options.system ?? ''}\n\nHouse rules: ${config.rules.join(' ')}`.trim() }));
  },
});

/** The stack: the scripted model (in practice a real provider, recorded once), the workspace tools, the plugin. */
export function stack(rules: string[]): HarnessConfig {
  return {
    defaults: { provider: 'scripted', model: 'scripted-default', system: 'You are a careful coding agent.' },
    plugins: [
      { module: '../plugins/llm-scripted/index.ts', config: { paceMs: 0 } },
      { module: '../plugins/tools-workspace/index.ts' },
      { module: '../plugins/llm-retry/index.ts' },
      { plugin: houseRules, config: { rules } },
    ],
  };
}

/** Records one session with `config` and returns its journal path (a cassette to keep next to your tests). */
export async function record(config: HarnessConfig, dataDir: string): Promise<string> {
  const harness = await createHarness({ config, baseDir, dataDir });
  try {
    const session = await harness.createSession({ cwd: workspace });
    await session.runToEnd('What is in this workspace?', { approve: () => 'allow' });
    await session.close();
    return session.path;
  } finally {
    await harness.dispose();
  }
}

export async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-'));
  try {
    const cassette = await record(stack(['Answer in English.']), dataDir);
    // The same stack: every request the model would see is the recorded one.
    const same = await expectCassette(cassette, { config: stack(['Answer in English.']), baseDir });
    // A change to the plugin: the re-run says where the model would see a difference.
    let diverged: string | undefined;
    try {
      await expectCassette(cassette, { config: stack(['Answer in English.', 'Never run commands.']), baseDir });
    } catch (error) {
      if (!(HarnessError.is(error) && error.code === 'CASSETTE_DIVERGED')) throw error;
      diverged = (error.failure.divergences as string[])[0];
    }
    // A dropped connection on the second call: llm-retry retries it, and the run still matches.
    const injected = await expectCassette(cassette, { config: stack(['Answer in English.']), baseDir, inject: ['2:disconnect@1'] });
    return { calls: same.calls, toolResults: same.toolResults, diverged, faults: injected.faults.map((f) => f.fault) };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
