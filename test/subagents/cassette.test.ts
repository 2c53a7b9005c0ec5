/** A cassette of a parent re-runs its subagents' recorded calls too, and reports "same". */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCassette } from '../../plugins/llm-replay/index.ts';
import { definePlugin, type Harness, type HarnessConfig, type PluginSpec } from '../../runtime/index.ts';
import { harness as cli } from '../cli/support.ts';
import { delegation, subagentHarness } from './support.ts';

let h: (Harness & { dir: string }) | undefined;
let config: HarnessConfig;
let recording: string;
let parentId: string;

beforeAll(async () => {
  h = await subagentHarness(delegation);
  config = h.config;
  const parent = await h.createSession({ cwd: h.dir });
  const approve = h.ctx.approvals!.create('read-only', { ask: () => true });
  await parent.prompt('delegate this', { approve });
  parentId = parent.id;
  recording = parent.path;
  await h.dispose();
});
afterAll(async () => {
  await h?.dispose();
});

describe('cassette of a parent with a subagent', () => {
  it('re-runs the child through run_subagent with its recorded calls: same', async () => {
    const report = await runCassette(recording, { config, approve: 'read-only' });
    expect(report.divergences).toEqual([]);
    expect(report.same).toBe(true);
    expect(report.subagents).toEqual({ recorded: 1, rerun: 1 });
    // 2 parent calls and 2 child calls, every one compared on its whole request.
    expect(report.calls).toMatchObject({ recorded: 4, served: 4, compared: 4, diverged: 0 });
    // The child's poke result is served (tools never run); run_subagent itself ran.
    expect(report.toolResults).toMatchObject({ recorded: 2, served: 1 });
  });

  it('diverges when the stack changes what the child sees, naming the subagent', async () => {
    // A middleware that gives child sessions a system prompt of their own: only the child's requests change.
    const childSystem: PluginSpec = {
      plugin: definePlugin({
        name: 'child-system',
        setup(ctx) {
          ctx.on('agent/request', (proposal, next) => next(proposal.session.header.parentSession ? { ...proposal, system: 'You are a subagent.' } : proposal));
        },
      }),
    };
    const report = await runCassette(recording, { config: { ...config, plugins: [...config.plugins, childSystem] }, approve: 'read-only' });
    expect(report.same).toBe(false);
    const text = report.divergences.join('\n');
    expect(text).toContain(`subagent ${parentId}.sub1: call 1 (turn 1 step 1): system`);
    expect(text).toContain('"You are a subagent."');
    expect(text).not.toMatch(/^call \d/m);
  });

  it('harness replay --cassette of the parent says same', async () => {
    // A project folder of its own (an ES module package), as `harness init` makes one.
    writeFileSync(join(h!.dir, 'package.json'), '{ "type": "module" }\n');
    const configPath = join(h!.dir, 'harness.config.ts');
    const modules = config.plugins.map((p) => (p.module !== undefined ? p : { module: join(import.meta.dirname, 'test-tools.ts') }));
    writeFileSync(configPath, `export default ${JSON.stringify({ ...config, plugins: modules })};\n`);
    const result = await cli(['replay', parentId, '--cassette', '--config', configPath, '--approve', 'read-only'], { home: join(h!.dir, 'data'), cwd: h!.dir });
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain('subagents: 1 of 1 re-run');
    expect(result.stdout).toMatch(/^same /m);
    expect(result.code).toBe(0);
  });
});
