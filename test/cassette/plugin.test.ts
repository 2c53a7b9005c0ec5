/**
 * llm-replay as a plain plugin (a route serving a journal's calls) on a journal with request
 * snapshots: a request is compared whole — on an alias route without the provider and the replay
 * state the seam drops there — and a difference names its path.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type HarnessConfig } from '../../runtime/index.ts';
import { plugin, tempDir } from '../agent/support.ts';

const demo = join(import.meta.dirname, '../../cookbook/demo-workspace');
const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.dispose();
});

async function make(config: HarnessConfig, dataDir: string): Promise<Harness> {
  const h = await createHarness({ config, dataDir });
  h.kernel.bus.add('kernel/diagnostic', () => undefined);
  harnesses.push(h);
  return h;
}

describe('llm-replay plugin on a journal with snapshots', () => {
  it('serves the same requests; a changed system prompt fails with its path', async () => {
    const dir = tempDir('harness-replay-plugin-');
    const tools = { module: plugin('tools-workspace') };
    const recorder = await make(
      { defaults: { provider: 'scripted', model: 'scripted-default', system: 'Be careful.' }, plugins: [{ module: plugin('llm-scripted'), config: { paceMs: 0 } }, tools] },
      join(dir, 'a'),
    );
    const recording = await recorder.createSession({ cwd: demo });
    await recording.runToEnd('What is in this workspace?', { approve: () => 'allow' });
    await recording.close();

    const player = async (system: string) =>
      make({ defaults: { provider: 'replay', model: 'scripted-default', system }, plugins: [{ module: plugin('llm-replay'), config: { journal: recording.path } }, tools] }, join(dir, `b-${system}`));
    const same = await player('Be careful.');
    const end = await (await same.createSession({ cwd: demo })).runToEnd('What is in this workspace?', { approve: () => 'allow' });
    expect(end.data.reason).toBe('completed');
    same.ctx.cassette!.assertConsumed();

    const changed = await player('Be quick.');
    const failed = await (await changed.createSession({ cwd: demo })).runToEnd('What is in this workspace?', { approve: () => 'allow' });
    expect(failed.data.reason).toBe('error');
    expect(failed.data.failure?.code).toBe('CASSETTE_MISMATCH');
    expect(failed.data.failure?.message).toContain('request 1 differs from recorded call 1 (turn 1, step 1');
    expect(failed.data.failure?.message).toContain('system: "Be careful." ≠ "Be quick."');
  });
});
