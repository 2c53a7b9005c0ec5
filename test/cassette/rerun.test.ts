/**
 * A journal as a regression test of your own stack (issue 15): a session recorded with the product
 * config (scripted model, workspace tools) re-runs "same" under that config, and diverges — naming
 * the first differing path of the request with both values — under each change a plugin author can
 * make; faults injected on recorded calls are retried by llm-retry; --update writes a fork.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCassette, type CassetteReport } from '../../plugins/llm-replay/index.ts';
import { createHarness, createPluginMessage, definePlugin, writeImportedSession, type HarnessConfig, type PluginSpec, type ToolSpec } from '../../runtime/index.ts';
import { loadConfig } from '../../runtime/internal.ts';
import { dshRoot } from '../session/support.ts';
import { tempDir } from '../agent/support.ts';

const root = resolve(import.meta.dirname, '../..');
const demo = join(root, 'cookbook/demo-workspace');
const dir = tempDir('harness-cassette-');
let product: HarnessConfig;
let recording: string;

/** The product config with changes; module paths resolve from the project root. */
type Defaults = { -readonly [K in keyof NonNullable<HarnessConfig['defaults']>]: NonNullable<HarnessConfig['defaults']>[K] };
function variant(change: (config: { defaults: Defaults; plugins: PluginSpec[] }) => void): HarnessConfig {
  const config = { ...product, defaults: { ...product.defaults! }, plugins: [...product.plugins] };
  change(config);
  return config;
}
const withPlugin = (spec: PluginSpec) => variant((c) => void c.plugins.push(spec));
const rerun = (config: HarnessConfig, options: Parameters<typeof runCassette>[1] = {}) => runCassette(recording, { config, baseDir: root, ...options });
const toolsRewrite = (name: string, rewrite: (tool: ToolSpec) => ToolSpec) =>
  withPlugin({
    plugin: definePlugin({
      name: `rewrite-${name}`,
      setup(ctx) {
        ctx.on('agent/request', (proposal, next) => next({ ...proposal, tools: proposal.tools.map((tool) => (tool.name === name ? rewrite(tool) : tool)) }));
      },
    }),
  });

beforeAll(async () => {
  product = await loadConfig(join(root, 'harness.config.ts'));
  const harness = await createHarness({ configPath: join(root, 'harness.config.ts'), dataDir: join(dir, 'data') });
  const session = await harness.createSession({ cwd: demo });
  const approvals = (harness.ctx as unknown as { approvals: { create(policy: string): never } }).approvals;
  const end = await session.runToEnd('What is in this workspace?', { approve: approvals.create('allow-all') });
  expect(end.data.reason).toBe('completed');
  await session.close();
  recording = session.path;
  await harness.dispose();
}, 60_000);
afterAll(() => undefined);

function expectSame(report: CassetteReport): void {
  expect(report.divergences).toEqual([]);
  expect(report.same).toBe(true);
}

describe('cassette re-run with the product config', { timeout: 60_000 }, () => {
  it('re-runs the same under the same config: every request compared whole, tool results served', async () => {
    const before = readFileSync(recording);
    const report = await rerun(product, { approve: 'allow-all' });
    expectSame(report);
    expect(report.calls).toEqual({ recorded: 3, served: 3, compared: 3, comparedOnHeader: 0, diverged: 0, injected: 0 });
    expect(report.toolResults).toEqual({ recorded: 2, served: 2, rerun: 0 });
    expect(report.turns).toEqual([{ turn: 1, reason: 'completed', recorded: 'completed', same: true, calls: 3 }]);
    expect(readFileSync(recording).equals(before)).toBe(true);
  });

  it('diverges on a changed system prompt, naming the path and both values', async () => {
    const report = await rerun(
      variant((c) => {
        c.defaults.system = 'You are a pirate.';
      }),
      { approve: 'allow-all' },
    );
    expect(report.same).toBe(false);
    expect(report.divergences[0]).toMatch(/^call 1 \(turn 1 step 1\): system: "You are a careful coding agent[^"]*… ≠ "You are a pirate\."$/);
    expect(report.calls.diverged).toBe(3);
  });

  it('diverges on a removed tool', async () => {
    const report = await rerun(
      variant((c) => {
        c.plugins = c.plugins.map((p) => (String(p.module).includes('tools-workspace') ? { ...p, config: { tools: ['read_file', 'write_file', 'edit_file', 'list_dir', 'exec_command'] } } : p));
      }),
      { approve: 'allow-all' },
    );
    expect(report.same).toBe(false);
    expect(report.divergences[0]).toBe('call 1 (turn 1 step 1): tools[4].name: "grep" ≠ "exec_command"');
  });

  it('diverges on a changed tool description', async () => {
    const report = await rerun(
      toolsRewrite('read_file', (tool) => ({ ...tool, description: 'Reads a file (v2).' })),
      { approve: 'allow-all' },
    );
    expect(report.divergences[0]).toMatch(/^call 1 \(turn 1 step 1\): tools\[0\]\.description: "Read a text file from the workspace\..*… ≠ "Reads a file \(v2\)\."$/);
  });

  it('diverges on a changed tool parameter schema', async () => {
    const report = await rerun(
      toolsRewrite('read_file', (tool) => ({ ...tool, inputSchema: { ...tool.inputSchema, properties: { ...(tool.inputSchema.properties as object), encoding: { type: 'string' } } } })),
      { approve: 'allow-all' },
    );
    expect(report.divergences[0]).toMatch(/^call 1 \(turn 1 step 1\): tools\[\d+\]\.inputSchema\.properties\.encoding: \(absent\) ≠ \{"type":"string"\}$/);
  });

  it('diverges on an added llm/stream middleware that rewrites the request', async () => {
    const middleware = definePlugin({
      name: 'context-note',
      setup(ctx) {
        ctx.on('llm/stream', (options, next) => next({ ...options, messages: [createPluginMessage('context-note', 'Today is Tuesday.'), ...options.messages] }));
      },
    });
    const report = await rerun(withPlugin({ plugin: middleware }), { approve: 'allow-all' });
    expect(report.divergences[0]).toMatch(/^call 1 \(turn 1 step 1\): messages\[0\]\.content\[0\]\.text: "What is in this workspace\?" ≠ "Today is Tuesday\."$/);
  });

  it('diverges when the approval policy now denies a recorded call', async () => {
    const report = await rerun(product, { approve: 'deny-all' });
    expect(report.same).toBe(false);
    expect(report.divergences).toContainEqual(
      expect.stringMatching(/^turn 1 step 1: approval of list_dir \(.+\): recorded allow \(policy:allow-all\), now deny \(policy:deny-all: the deny-all policy runs no tools\)$/),
    );
    // What the model then sees differs too: the tool result is a denial.
    expect(report.divergences.some((d) => /^call 2 \(turn 1 step 2\): messages\[\d+\]\.content\[0\]\.content\[0\]\.text: /.test(d))).toBe(true);
  });

  it('an injected disconnect is retried by llm-retry and the run still matches; without llm-retry it diverges', async () => {
    const retried = await rerun(product, { approve: 'allow-all', inject: ['2:disconnect@2'] });
    expectSame(retried);
    expect(retried.faults).toEqual([{ call: 2, fault: 'disconnect after chunk 2', where: 'call 2 (turn 1 step 2)' }]);
    expect(retried.calls).toMatchObject({ served: 3, injected: 1, diverged: 0 });
    const noRetry = await rerun(
      variant((c) => {
        c.plugins = c.plugins.filter((p) => !String(p.module).includes('llm-retry'));
      }),
      { approve: 'allow-all', inject: ['2:disconnect@2'] },
    );
    expect(noRetry.same).toBe(false);
    expect(noRetry.divergences).toContain('turn 1 ended error; the recording says completed');
    expect(noRetry.divergences).toContainEqual(expect.stringMatching(/^2 recorded model call\(s\) never requested: call 2 \(turn 1 step 2\), call 3 \(turn 1 step 3\)$/));
  });

  it("an HTTP 429 with retry-after is retried after the provider's delay; a stall past the idle timeout is retried too", async () => {
    const report = await rerun(product, { approve: 'allow-all', inject: ['1:status=429,retry-after=0.2', '3:stall@1'] });
    expectSame(report);
    expect(report.faults.map((f) => f.fault)).toEqual(['HTTP 429 with retry-after 0.2 s', 'stall after chunk 1 past the idle timeout']);
  });

  it('--update writes a divergent run as a fork that re-runs the same; the recording is unchanged', async () => {
    const before = readFileSync(recording);
    const changed = variant((c) => {
      c.defaults.system = 'You are a pirate.';
    });
    const report = await rerun(changed, { approve: 'allow-all', update: { dataDir: join(dir, 'data') } });
    expect(report.same).toBe(false);
    expect(report.fork?.id).toMatch(/\.update-1$/);
    expect(readFileSync(recording).equals(before)).toBe(true);
    const header = JSON.parse(readFileSync(report.fork!.path, 'utf8').split('\n')[0]!);
    expect(header.parent).toEqual({ sessionId: report.recording.id, seq: 0 });
    expectSame(await runCassette(report.fork!.path, { config: changed, baseDir: root, approve: 'allow-all' }));
  });

  it('--run-tools re-executes the tool calls in a scratch copy of the workspace (the workspace untouched)', async () => {
    const report = await rerun(product, { approve: 'allow-all', runTools: demo });
    expectSame(report);
    expect(report.toolResults).toEqual({ recorded: 2, served: 0, rerun: 2 });
    expect(report.notes).toContainEqual(`tools re-run in a scratch copy of ${demo}`);
  });

  it('two re-runs write journals equal up to their header (deterministic ids and clock)', async () => {
    const a = await rerun(product, { approve: 'allow-all', dataDir: join(dir, 'a') });
    const b = await rerun(product, { approve: 'allow-all', dataDir: join(dir, 'b') });
    const body = (path: string) => readFileSync(path, 'utf8').split('\n').slice(1).join('\n');
    expect(body(a.rerun.path).length).toBeGreaterThan(1000);
    expect(body(a.rerun.path)).toBe(body(b.rerun.path));
  });

  it('an imported DeepSeek Harness session re-runs the same (placeholders match anything)', async () => {
    for (const name of ['fs-read', 'multi-turn']) {
      const written = await writeImportedSession(join(dshRoot, 'acp-agent', name, 'session.jsonl'), { dataDir: join(dir, 'dsh'), id: name });
      const report = await runCassette(written.path, { config: product, baseDir: root });
      expectSame(report);
      expect(report.recording.imported).toBe(true);
      expect(report.calls.comparedOnHeader).toBe(report.calls.recorded);
      expect(report.notes).toContainEqual(expect.stringContaining('predates request snapshots'));
    }
  });
});
