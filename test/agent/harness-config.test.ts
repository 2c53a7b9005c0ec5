import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHarness, type HarnessConfig } from '../../runtime/index.ts';
import { plugin, tempDir } from './support.ts';

describe('harness config and sessions: bad input is a clear error', () => {
  it('a typo in the config itself is an error naming the key, not silently ignored', async () => {
    const bad = { plugins: [], defualts: { provider: 'scripted', model: 'scripted-default' } } as unknown as HarnessConfig;
    await expect(createHarness({ config: bad })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('unknown key "defualts"') });
    const badEntry = { plugins: [{ module: plugin('approvals'), cofig: {} }] } as unknown as HarnessConfig;
    await expect(createHarness({ config: badEntry })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/plugins\.0: unknown key "cofig"/) });
  });

  it('a typo in a plugin config is an error naming the plugin and the key', async () => {
    const config: HarnessConfig = { plugins: [{ module: plugin('llm-scripted'), config: { paceMS: 12 } }] };
    await expect(createHarness({ config })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/Plugin "llm-scripted"[\s\S]*paceMS/) });
  });

  it('a session cannot start in, or resume into, a workspace that does not exist', async () => {
    const dir = tempDir();
    const harness = await createHarness({ dataDir: join(dir, 'data'), config: { plugins: [{ module: plugin('llm-scripted') }] } });
    try {
      await expect(harness.createSession({ cwd: join(dir, 'missing') })).rejects.toMatchObject({ code: 'WORKSPACE_NOT_FOUND' });
      writeFileSync(join(dir, 'file.txt'), 'not a directory');
      await expect(harness.createSession({ cwd: join(dir, 'file.txt') })).rejects.toMatchObject({ code: 'WORKSPACE_NOT_FOUND' });
      const session = await harness.createSession({ cwd: dir });
      await session.close();
      await expect(harness.openSession(session.id, { cwd: join(dir, 'gone') })).rejects.toMatchObject({ code: 'WORKSPACE_NOT_FOUND' });
      // The refused open released the journal: it opens again.
      const { session: again } = await harness.openSession(session.id);
      await again.close();
    } finally {
      await harness.dispose();
    }
  });
});
