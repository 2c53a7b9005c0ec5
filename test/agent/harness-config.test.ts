import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHarness, type HarnessConfig } from '../../runtime/index.ts';
import { plugin, tempDir } from './support.ts';

describe('harness config and sessions: bad input is a clear error', () => {
  it('a typo in the config itself is an error naming the key, not silently ignored', async () => {
    const bad = { plugins: [], defualts: { provider: 'scripted', model: 'scripted-default' } } as unknown as HarnessConfig;
    await expect(createHarness({ config: bad })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('  - defualts: unknown key; did you mean `defaults`?') });
    const badEntry = { plugins: [{ module: plugin('approvals'), cofig: {} }] } as unknown as HarnessConfig;
    await expect(createHarness({ config: badEntry })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('  - plugins.0.cofig: unknown key; did you mean `config`?') });
  });

  it('a typo in a plugin config is an error naming the plugin and the key', async () => {
    const config: HarnessConfig = { plugins: [{ module: plugin('llm-scripted'), config: { paceMS: 12 } }] };
    await expect(createHarness({ config })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(/Plugin "llm-scripted"[\s\S]*paceMS: unknown key; did you mean `paceMs`\?/),
    });
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

  it('with no defaults in the config, a run that names no provider fails NO_DEFAULT_MODEL (the runtime guesses no model) and journals nothing', async () => {
    const dir = tempDir();
    const configPath = join(dir, 'harness.config.ts');
    writeFileSync(configPath, `export default { plugins: [{ module: ${JSON.stringify(plugin('llm-scripted'))} }] };\n`);
    const harness = await createHarness({ configPath, dataDir: join(dir, 'data') });
    try {
      const session = await harness.createSession({ cwd: dir });
      const noDefault = {
        code: 'NO_DEFAULT_MODEL',
        message: expect.stringContaining(`${configPath} has no defaults and no provider was given. Add defaults: { provider, model } to ${configPath}`),
        failure: expect.objectContaining({ path: configPath }),
      };
      await expect(session.prompt('Hello')).rejects.toMatchObject(noDefault);
      expect(() => session.run('Hello')).toThrow(expect.objectContaining({ code: 'NO_DEFAULT_MODEL' }));
      // A provider without a model is no call either.
      await expect(session.prompt('Hello', { provider: 'scripted' })).rejects.toMatchObject({
        code: 'NO_DEFAULT_MODEL',
        message: expect.stringContaining('provider "scripted" was given without a model'),
      });
      expect(session.state.turnCount).toBe(0);
      // Named in the run, the same session works, and later runs keep the journal's model.
      const first = await session.prompt('Hello', { provider: 'scripted', model: 'scripted-default' });
      expect(first.message.source).toMatchObject({ provider: 'scripted', model: 'scripted-default' });
      const second = await session.prompt('Again');
      expect(second.message.source).toMatchObject({ provider: 'scripted', model: 'scripted-default' });
      await session.close();
    } finally {
      await harness.dispose();
    }
  });
});
