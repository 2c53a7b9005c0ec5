/**
 * Helpers for the plugin tests (llm-retry, token-meter, compaction): harnesses over the scripted
 * model or over the REAL openai SDK pointed at the loopback fixture server, and event helpers.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHarness, defineTool, z, type AnySessionEvent, type GenerateOptions, type Harness, type ToolDefinition } from '../../runtime/index.ts';
import { collect, ofType, plugin, tempDir, type JsonScriptLike } from '../agent/support.ts';
import { startFixtureServer, type FixtureServer } from '../support/fixture-server.ts';

export { assertPaired, collect, ofType, plugin, recordingTools, tempDir, type JsonScriptLike } from '../agent/support.ts';

/** The env variable the fixture-server route reads its key from (never a real provider variable). */
export const FIXTURE_KEY_ENV = 'HARNESS_PLUGIN_TEST_KEY';
process.env[FIXTURE_KEY_ENV] = 'test-key';

export const allow = () => 'allow' as const;

export type PluginEntry = { module: string; config?: unknown };

/**
 * A harness whose default model is `fx/gpt-4o`: an OpenAI chat route (real `openai` SDK, its own
 * retries off) pointed at a fresh fixture server, plus `plugins`.
 */
export async function fixtureHarness(plugins: PluginEntry[]): Promise<{ harness: Harness; server: FixtureServer; close(): Promise<void> }> {
  const server = await startFixtureServer();
  const dir = tempDir('harness-plugins-');
  let harness: Harness;
  try {
    harness = await createHarness({
      dataDir: join(dir, 'data'),
      config: {
        defaults: { provider: 'fx', model: 'gpt-4o' },
        plugins: [
          {
            module: plugin('llm-openai'),
            config: { providers: { fx: { api: 'chat', compat: 'openai', baseURL: server.openaiBaseURL, apiKeyEnv: FIXTURE_KEY_ENV, models: [{ id: 'gpt-4o', contextWindow: 128_000 }] } } },
          },
          ...plugins,
        ],
      },
    });
  } catch (error) {
    await server.close();
    throw error;
  }
  return {
    harness,
    server,
    async close() {
      await harness.dispose();
      await server.close();
    },
  };
}

/**
 * A harness serving `script` (a JSON rule list, or the path of a script module) as model
 * `scripted/test`, with `plugins` after the scripted model.
 */
export async function scriptedPluginHarness(
  script: JsonScriptLike | string,
  options: { contextWindow?: number; plugins?: PluginEntry[]; tools?: ToolDefinition[]; dataDir?: string; system?: string } = {},
): Promise<Harness & { dir: string }> {
  const dir = tempDir('harness-plugins-');
  let scriptPath: string;
  if (typeof script === 'string') scriptPath = script;
  else {
    scriptPath = join(dir, 'script.json');
    writeFileSync(scriptPath, JSON.stringify(script));
  }
  const harness = await createHarness({
    dataDir: options.dataDir ?? join(dir, 'data'),
    config: {
      defaults: { provider: 'scripted', model: 'test', ...(options.system === undefined ? {} : { system: options.system }) },
      plugins: [
        { module: plugin('llm-scripted'), config: { paceMs: 0, scripts: { test: scriptPath }, ...(options.contextWindow ? { contextWindow: options.contextWindow } : {}) } },
        ...(options.plugins ?? []),
      ],
    },
  });
  for (const tool of options.tools ?? []) harness.ctx.tools.register(tool);
  return Object.assign(harness, { dir });
}

/** Records every `llm/stream` request (the options the adapter chain receives). */
export function recordRequests(harness: Harness): GenerateOptions[] {
  const requests: GenerateOptions[] = [];
  harness.ctx.on('llm/stream', (options, next) => {
    requests.push(options);
    return next();
  });
  return requests;
}

/** A read tool `fetch {key}` that returns `size` characters and counts its runs. */
export function bulkyTool(ran: string[], size = 400): ToolDefinition {
  return defineTool({
    name: 'fetch',
    description: 'Fetches a document by key.',
    input: z.object({ key: z.string() }),
    permission: 'read',
    execute: ({ key }) => {
      ran.push(key);
      return `${key}:`.padEnd(size, '.');
    },
  });
}

/** Runs one turn and returns its events and the turn/end event. */
export async function runTurn(session: { run: (input: string, options: object) => AsyncIterable<AnySessionEvent> }, input: string, options: object = { approve: allow }) {
  const events = await collect(session.run(input, options));
  const end = ofType(events, 'turn/end')[0]!;
  return { events, end };
}

/** `owners` of `hook` (one entry per listener). */
export function ownersOf(harness: Harness, hook: string): string[] {
  return harness.kernel.bus.describe().find((h) => h.name === hook)?.owners ?? [];
}
