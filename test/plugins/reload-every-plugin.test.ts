/**
 * Every plugin in plugins/ passes the same reload test: loaded, reloaded 10 times while a session is
 * running, then unloaded. While it is loaded, its hooks, routes, tools and services exist exactly
 * once (as many as after the first load); afterwards, not at all. The running session never sees a
 * missing route.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, type AnySessionEvent, type Harness } from '../../runtime/index.ts';
import { registeredStoreSchemes } from '../../runtime/internal.ts';
import { dshRoot } from '../session/support.ts';
import { plugin, root, tempDir } from '../agent/support.ts';
import { stdioServer } from '../mcp/support.ts';

const PLUGINS = readdirSync(join(root, 'plugins'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

/** Config a plugin needs to load in this test. */
const CONFIG: Record<string, unknown> = {
  'llm-replay': { journal: join(dshRoot, 'acp-agent', 'text-turn', 'session.jsonl'), provider: 'replay' },
  'llm-scripted': { paceMs: 3 },
  // A real MCP server (test/mcp/servers/): kept running across the reloads, its tools registered once per generation.
  mcp: { servers: [stdioServer('demo')] },
};

/** Everything plugin `name` has registered, by kind. */
function footprint(harness: Harness, name: string) {
  const hooks = harness.kernel.bus
    .describe()
    .flatMap((hook) => hook.owners.filter((owner) => owner === name).map(() => hook.name))
    .sort();
  const routes = harness.llm.registry
    .list()
    .filter((route) => route.owner === name)
    .map((route) => route.provider)
    .sort();
  const tools = harness.tools
    .describe()
    .filter((tool) => tool.owner === name)
    .map((tool) => tool.name)
    .sort();
  const services = harness.kernel
    .describeServices()
    .filter((service) => service.owner === name)
    .map((service) => service.name)
    .sort();
  // Store schemes carry no owner; the base plugins of this test register none, so they are the plugin's.
  const stores = registeredStoreSchemes();
  return { hooks, routes, tools, services, stores };
}

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

describe('every plugin reloads cleanly under a running session', () => {
  it('finds the plugins', () => {
    expect(PLUGINS).toEqual(expect.arrayContaining(['approvals', 'compaction', 'llm-anthropic', 'llm-openai', 'llm-replay', 'llm-retry', 'llm-scripted', 'token-meter', 'tools-workspace']));
  });

  for (const name of PLUGINS) {
    it(name, async () => {
      const dir = tempDir('harness-reload-');
      writeFileSync(join(dir, 'README.md'), '# Reload test\n\nA file for the scripted model to read.\n');
      // The session needs a model and the tools of the default script; the plugin under test is added
      // (or, if it is one of these, it is the one loaded).
      const base = ['llm-scripted', 'tools-workspace', 'approvals'];
      const names = base.includes(name) ? base : [...base, name];
      harness = await createHarness({
        dataDir: join(dir, 'data'),
        config: { defaults: { provider: 'scripted', model: 'scripted-default' }, plugins: names.map((n) => ({ module: plugin(n), ...(CONFIG[n] ? { config: CONFIG[n] } : {}) })) },
      });
      const loaded = footprint(harness, name);
      const total = loaded.hooks.length + loaded.routes.length + loaded.tools.length + loaded.services.length + loaded.stores.length;
      expect(total, `${name} registers something`).toBeGreaterThan(0);

      const session = await harness.createSession({ cwd: dir });
      const events: AnySessionEvent[] = [];
      let finished = false;
      const running = (async () => {
        for (let turn = 0; turn < 3; turn++) for await (const event of session.run('What is in this workspace?', { approve: () => 'allow' })) events.push(event);
        finished = true;
      })();
      let reloadsWhileRunning = 0;
      const seen: ReturnType<typeof footprint>[] = [];
      for (let i = 0; i < 10; i++) {
        await new Promise((resolve) => setTimeout(resolve, 15));
        if (!finished) reloadsWhileRunning++;
        const info = await harness.host.reload(name);
        expect(info.generation).toBe(i + 2);
        seen.push(footprint(harness, name));
      }
      await running;
      expect(reloadsWhileRunning, 'reloads happened while the session was running').toBeGreaterThanOrEqual(5);
      expect(seen).toEqual(Array.from({ length: 10 }, () => loaded));

      // The session saw every route it needed: three completed turns, no model-call failure.
      const ends = events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: string }).reason);
      expect(ends).toEqual(['completed', 'completed', 'completed']);
      const failures = events.filter((e) => e.type === 'assistant/chunk' && e.data.chunk.type === 'finish' && e.data.chunk.finish.kind === 'error');
      expect(failures).toEqual([]);

      await session.close();
      await harness.host.unload(name);
      expect(footprint(harness, name)).toEqual({ hooks: [], routes: [], tools: [], services: [], stores: [] });
    });
  }
});
