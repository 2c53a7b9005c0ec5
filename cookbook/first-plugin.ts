/**
 * Cookbook: your first plugin — an `llm/stream` middleware.
 * Run: npx tsx cookbook/first-plugin.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, definePlugin, registerEventType, z, type EmitHook, type SessionHandle } from '../runtime/index.ts';

/** What the plugin measures about one model call. */
export interface StreamStat {
  readonly provider: string;
  readonly model: string;
  readonly chunkCount: number;
  readonly textChars: number;
  /** ms from the request to its first chunk */
  readonly firstChunkMs: number;
  readonly finish: string;
}

// Types by declaration merging: a hook, a service and a session event of this plugin.
declare global {
  namespace Harness {
    interface HookMap {
      'stream-stats/call': EmitHook<StreamStat>;
    }
    interface Services {
      streamStats?: { readonly calls: readonly StreamStat[] };
    }
    interface SessionEventMap {
      'stream-stats/call': StreamStat;
    }
  }
}

export const streamStats = definePlugin({
  name: 'stream-stats',
  config: z.object({ slowFirstChunkMs: z.number().int().positive().default(2000) }).default({ slowFirstChunkMs: 2000 }),
  setup(ctx, config) {
    const calls: StreamStat[] = [];
    /** The session each agent-loop call is made for (from `agent/pre-step`, the hook that has the handle). */
    const sessions = new Map<string, SessionHandle>();
    ctx.declareHook('stream-stats/call', 'emit');
    ctx.onDispose(registerEventType('stream-stats/call', { ignorable: true }));
    ctx.provide('streamStats', { calls });
    ctx.onDispose(() => sessions.clear());

    ctx.on('agent/pre-step', async (payload, next) => {
      sessions.set(payload.session.id, payload.session);
      return next(payload);
    });

    // Waterfall: wrap the model stream. Every chunk passes through unchanged; we only count.
    ctx.on('llm/stream', async function* (request, next) {
      const started = performance.now();
      let firstChunkMs = -1;
      let chunkCount = 0;
      let textChars = 0;
      let stat: StreamStat | undefined;
      for await (const chunk of next(request)) {
        if (firstChunkMs < 0) firstChunkMs = performance.now() - started;
        chunkCount++;
        if (chunk.type === 'text-delta') textChars += chunk.text.length;
        if (chunk.type === 'finish') {
          stat = { provider: request.provider, model: request.model, chunkCount, textChars, firstChunkMs: Math.round(firstChunkMs), finish: chunk.finish.kind };
          calls.push(stat);
          if (firstChunkMs > config.slowFirstChunkMs)
            ctx.report({ level: 'warning', code: 'SLOW_FIRST_CHUNK', message: `${request.provider}/${request.model} took ${Math.round(firstChunkMs)} ms to start` });
          ctx.emit('stream-stats/call', stat);
        }
        yield chunk;
      }
      // The stream is over (the loop has journaled its finish chunk): journal this call's stats in
      // its session, as an ignorable event, right after the call — the last call of a turn included.
      const session = request.sessionId === undefined ? undefined : sessions.get(request.sessionId);
      if (stat !== undefined && session !== undefined && request.purpose === 'agent') await session.append('stream-stats/call', stat);
    });
  },
});

export async function main(): Promise<{ calls: readonly StreamStat[]; emitted: number; journaled: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-'));
  const harness = await createHarness({
    config: {
      defaults: { provider: 'scripted', model: 'scripted-default' },
      plugins: [{ module: '../plugins/llm-scripted/index.ts' }, { module: '../plugins/tools-workspace/index.ts' }, { plugin: streamStats, config: { slowFirstChunkMs: 5000 } }],
    },
    baseDir: fileURLToPath(new URL('.', import.meta.url)),
    dataDir,
  });
  try {
    let emitted = 0;
    harness.ctx.on('stream-stats/call', () => void emitted++);
    const session = await harness.createSession({ cwd: fileURLToPath(new URL('demo-workspace', import.meta.url)) });
    let journaled = 0;
    for await (const event of session.run('What is in this workspace?', { approve: () => 'allow' })) {
      if (event.type === 'stream-stats/call') journaled++;
    }
    return { calls: harness.ctx.streamStats!.calls, emitted, journaled };
  } finally {
    await harness.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
