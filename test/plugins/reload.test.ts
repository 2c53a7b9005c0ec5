/**
 * Hot reload of llm-retry, token-meter and compaction in the middle of a session (issue #7: each
 * plugin is hot-reloadable). After `host.reload(name)` each hook has exactly one listener of the
 * plugin, and the session goes on with the new generations: a failure is retried once (not twice),
 * a threshold compacts once, the meter counts every request exactly once.
 *
 * The meter's state survives a reload (decision, see plugins/token-meter): the new generation adopts
 * the projection of the generation it replaces, and derives costs from its own price table.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defineTool, z, type AnySessionEvent, type Harness, type StreamChunk, type TokenUsage } from '../../runtime/index.ts';
import { assertPaired, bulkyTool, ofType, ownersOf, plugin, recordRequests, runTurn, scriptedPluginHarness } from './support.ts';

const SCRIPT = join(import.meta.dirname, 'scripts/overflow.ts');
const NAMES = ['llm-retry', 'token-meter', 'compaction'] as const;

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

/** Fails the next `count` agent model calls with SERVER (a middleware answering instead of the model). */
function injectFailures(h: Harness) {
  const state = { count: 0 };
  h.ctx.on('llm/stream', (options, next) => {
    if (options.purpose !== 'agent' || state.count === 0) return next();
    state.count--;
    return (async function* (): AsyncGenerator<StreamChunk> {
      yield { type: 'finish', finish: { kind: 'error', failure: { code: 'SERVER', message: 'injected failure' } } };
    })();
  });
  return state;
}

function recordedTotals(events: readonly AnySessionEvent[]): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const event of events) {
    const usage: TokenUsage | undefined = event.type === 'assistant/message' ? event.data.usage : event.type === 'compaction/summary' ? event.data.usage : undefined;
    for (const [key, value] of Object.entries(usage ?? {})) if (typeof value === 'number') totals[key] = (totals[key] ?? 0) + value;
  }
  return totals;
}

const hookSnapshot = (h: Harness) => ({
  requestError: ownersOf(h, 'agent/request-error'),
  preStep: ownersOf(h, 'agent/pre-step'),
  sessionEvent: ownersOf(h, 'session/event'),
});

describe('reloading llm-retry, token-meter and compaction mid-session', () => {
  it('keeps exactly one registration of each, and the session goes on with the new generations', async () => {
    const ran: string[] = [];
    const reloads: string[] = [];
    const h = await scriptedPluginHarness(SCRIPT, {
      contextWindow: 1000,
      tools: [bulkyTool(ran)],
      plugins: [
        { module: plugin('llm-retry'), config: { maxRetries: 2, initialDelayMs: 1, jitterRatio: 0 } },
        { module: plugin('token-meter'), config: { prices: { scripted: { '*': { inputTokens: 1, outputTokens: 2 } } } } },
        { module: plugin('compaction'), config: { reserveTokens: 600, keepTurns: 2 } },
      ],
    });
    harness = h;
    h.ctx.on('plugin/reloaded', (info) => void reloads.push(`${info.name}#${info.generation}`));
    const failures = injectFailures(h);
    const requests = recordRequests(h);
    const before = hookSnapshot(h);
    expect(before.requestError).toEqual(['compaction', 'llm-retry']); // compaction (stage −10) outermost
    expect(before.preStep).toEqual(['compaction']);
    expect(before.sessionEvent.filter((o) => o === 'token-meter')).toHaveLength(1);

    const session = await h.createSession();
    const events: AnySessionEvent[] = [];
    failures.count = 1;
    events.push(...(await runTurn(session, 'task 1')).events);
    expect(ofType(events, 'llm/retry')).toHaveLength(1);

    // Reload all three from inside a tool body, i.e. in the middle of a turn.
    const meterBefore = h.ctx.tokenMeter!;
    let usageAtReload: ReturnType<typeof meterBefore.session> | undefined;
    h.ctx.tools.register(
      defineTool({
        name: 'reload_plugins',
        description: 'Reloads the plugins under test.',
        input: z.object({}),
        permission: 'read',
        execute: async () => {
          usageAtReload = h.ctx.tokenMeter!.session(session.id);
          for (const name of NAMES) await h.host.reload(name);
          return 'reloaded';
        },
      }),
    );
    const reloadTurn = await runTurn(session, 'call reload_plugins');
    expect(reloadTurn.end.data.reason).toBe('completed');
    events.push(...reloadTurn.events);
    expect(ofType(reloadTurn.events, 'tool/result')[0]!.data.message.content[0]).toMatchObject({ isError: false });
    expect(usageAtReload!.requests.length).toBeGreaterThan(0);
    expect(reloads).toEqual(['llm-retry#2', 'token-meter#2', 'compaction#2']);
    expect(
      h.host
        .list()
        .filter((p) => (NAMES as readonly string[]).includes(p.name))
        .map((p) => p.generation),
    ).toEqual([2, 2, 2]);

    // Exactly once each, in the same places.
    expect(hookSnapshot(h)).toEqual(before);
    // The meter's service is a new object; its projection was adopted, not lost.
    const meterAfter = h.ctx.tokenMeter!;
    expect(meterAfter).not.toBe(meterBefore);
    expect(meterAfter.session(session.id).totals).toStrictEqual(recordedTotals(events));

    // The session goes on: a failure is retried once (one llm/retry, not two), a threshold compacts once.
    failures.count = 1;
    for (let i = 3; i <= 8; i++) {
      const turn = await runTurn(session, `task ${i}`);
      expect(turn.end.data.reason).toBe('completed');
      events.push(...turn.events);
    }
    const retries = ofType(events, 'llm/retry');
    expect(retries).toHaveLength(2);
    expect(retries[1]!.data).toMatchObject({ attempt: 1, delayMs: 1, failure: { code: 'SERVER' } });
    const starts = ofType(events, 'compaction/start');
    expect(starts.length).toBeGreaterThanOrEqual(1);
    // Never two compactions in a row (a duplicated listener would start a second one at once).
    for (const start of starts) expect(events[events.indexOf(start) + 4]?.type).not.toBe('compaction/start');
    expect(ofType(events, 'compaction/end').every((e) => e.data.outcome === 'compacted')).toBe(true);
    expect(requests.filter((r) => r.purpose === 'compaction')).toHaveLength(starts.length);
    assertPaired(session.state.messages);

    // The meter counted every request exactly once across the reload, priced at its price table.
    const usage = meterAfter.session(session.id);
    const totals = recordedTotals(events);
    expect(usage.totals).toStrictEqual(totals);
    expect(usage.requests).toHaveLength(ofType(events, 'assistant/message').length + ofType(events, 'compaction/summary').length);
    expect(usage.costUsd).toBeCloseTo((totals.inputTokens! * 1 + totals.outputTokens! * 2) / 1e6, 12);
    expect(usage.requests.map((r) => r.seq)).toEqual([...new Set(usage.requests.map((r) => r.seq))]);
  });

  it('a meter reloaded with a new price table re-prices what it counted; an unloaded meter starts empty when loaded again', async () => {
    const h = await scriptedPluginHarness(SCRIPT, {
      tools: [bulkyTool([])],
      plugins: [{ module: plugin('token-meter'), config: { prices: { scripted: { '*': { inputTokens: 1, outputTokens: 1 } } } } }],
    });
    harness = h;
    const session = await h.createSession();
    const { events } = await runTurn(session, 'task 1');
    const totals = recordedTotals(events);
    expect(h.ctx.tokenMeter!.session(session.id).costUsd).toBeCloseTo((totals.inputTokens! + totals.outputTokens!) / 1e6, 12);
    await h.host.reload('token-meter', { config: { prices: { scripted: { '*': { inputTokens: 10, outputTokens: 100 } } } } });
    const repriced = h.ctx.tokenMeter!.session(session.id);
    expect(repriced.totals).toStrictEqual(totals);
    expect(repriced.costUsd).toBeCloseTo((totals.inputTokens! * 10 + totals.outputTokens! * 100) / 1e6, 12);
    expect(ownersOf(h, 'session/event').filter((o) => o === 'token-meter')).toHaveLength(1);

    await h.host.unload('token-meter');
    expect(h.ctx.tokenMeter).toBeUndefined();
    await h.host.load({ module: plugin('token-meter') });
    // The load itself is journaled in the open session (`plugin/reload`), so the new meter knows
    // the session at once — and has counted nothing of it.
    expect(h.ctx.tokenMeter!.sessions()).toEqual([session.id]);
    expect(h.ctx.tokenMeter!.session(session.id).totals).toStrictEqual({});
    expect(h.ctx.tokenMeter!.session(session.id).costUsd).toBe(0);
  });
});
