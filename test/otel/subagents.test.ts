/**
 * A subagent's spans are children of the parent's `execute_tool` span that ran them (issue 21): the
 * scripted model and the subagents plugin, live to a real OTLP/HTTP receiver on 127.0.0.1, then the
 * parent's journal exported with its children (`store`), which gives the same tree (ids aside). A
 * kept subagent's second turn hangs under the `input_subagent` call that ran it, not the spawn.
 */
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, readJournal, type Harness } from '../../runtime/index.ts';
import { exportJournalTraces } from '../../plugins/otel/index.ts';
import { plugin, tempDir, type JsonScriptLike } from '../agent/support.ts';
import { harness as cli } from '../cli/support.ts';
import { delegation, subagentConfig } from '../subagents/support.ts';
import { receiverPerTest, type ReceivedSpan } from './receiver.ts';

const PARENT = 'otel-parent';
const CHILD = `${PARENT}.sub1`;

const receiver = receiverPerTest();
let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

/** Runs one turn of session PARENT on `prompt` with the otel plugin sending to `endpoint`. */
async function tracedDelegation(script: JsonScriptLike, endpoint: string): Promise<string> {
  const dir = tempDir('harness-otel-subagents-');
  const config = subagentConfig(script, dir);
  harness = await createHarness({
    dataDir: join(dir, 'data'),
    config: { ...config, plugins: [...config.plugins!, { module: plugin('otel'), config: { endpoint, scheduledDelayMs: 20, metrics: false } }] },
  });
  const parent = await harness.createSession({ id: PARENT, cwd: dir });
  const result = await parent.prompt('delegate this', { approve: () => 'allow' });
  expect(result.text).toBe('PARENT_DONE');
  await parent.close();
  await harness.ctx.otel!.flush();
  return parent.path;
}

/** The tree: `name [session]` of each span with its children in start order; the ids only link them. */
function tree(spans: readonly ReceivedSpan[]): unknown[] {
  const node = (span: ReceivedSpan): unknown => {
    const children = spans
      .filter((child) => child.parentSpanId === span.spanId)
      .sort((a, b) => a.startMs - b.startMs || a.name.localeCompare(b.name))
      .map(node);
    const label = `${span.name} [${span.attributes['gen_ai.conversation.id']}]`;
    return children.length === 0 ? label : { [label]: children };
  };
  return spans.filter((span) => span.parentSpanId === undefined).map(node);
}

/** The same tree with every span's times and attributes: what live and exported spans must share. */
function detailed(spans: readonly ReceivedSpan[]): unknown[] {
  const node = (span: ReceivedSpan): unknown => ({
    name: span.name,
    startMs: span.startMs,
    endMs: span.endMs,
    attributes: span.attributes,
    events: span.events,
    status: span.status,
    children: spans
      .filter((child) => child.parentSpanId === span.spanId)
      .sort((a, b) => a.startMs - b.startMs || a.name.localeCompare(b.name))
      .map(node),
  });
  return spans.filter((span) => span.parentSpanId === undefined).map(node);
}

describe('otel + subagents: a child session traced under the call that ran it', { timeout: 120_000 }, () => {
  it("puts the child's invoke_agent under the parent's execute_tool run_subagent span, in the parent's trace; the export with children matches", async () => {
    const live = await receiver();
    const path = await tracedDelegation(delegation, live.url);
    const spans = await live.waitForSpans(12);
    expect(spans).toHaveLength(12);
    expect(tree(spans)).toEqual([
      {
        [`invoke_agent harness [${PARENT}]`]: [
          {
            [`step [${PARENT}]`]: [
              `chat test [${PARENT}]`,
              {
                [`execute_tool run_subagent [${PARENT}]`]: [
                  {
                    [`invoke_agent harness [${CHILD}]`]: [{ [`step [${CHILD}]`]: [`chat test [${CHILD}]`, `execute_tool poke [${CHILD}]`] }, { [`step [${CHILD}]`]: [`chat test [${CHILD}]`] }],
                  },
                ],
              },
            ],
          },
          { [`step [${PARENT}]`]: [`chat test [${PARENT}]`] },
        ],
      },
    ]);
    expect(new Set(spans.map((span) => span.traceId)).size).toBe(1);
    const run = spans.find((span) => span.name === 'execute_tool run_subagent')!;
    const child = spans.find((span) => span.name === 'invoke_agent harness' && span.attributes['gen_ai.conversation.id'] === CHILD)!;
    expect(child.startMs).toBeGreaterThanOrEqual(run.startMs);
    expect(child.endMs).toBeLessThanOrEqual(run.endMs);

    // The parent's journal with its children, exported after the fact: the same tree and spans.
    const later = await receiver();
    const report = await exportJournalTraces(PARENT, readJournal(path), { endpoint: later.url, metrics: false, store: harness!.store });
    expect(report).toMatchObject({ sessionCount: 2, turnCount: 2, exportedSpanCount: 12, droppedSpanCount: 0, complete: true });
    expect(new Set(later.spans.map((span) => span.traceId)).size).toBe(1);
    expect(detailed(later.spans)).toEqual(detailed(spans));
    // Without a store, the session's own spans only.
    const alone = await receiver();
    expect(await exportJournalTraces(PARENT, readJournal(path), { endpoint: alone.url, metrics: false })).toMatchObject({ sessionCount: 1, exportedSpanCount: 6 });

    // The CLI exports the children too (from the store of its data directory).
    const fromCli = await receiver();
    const exported = await cli(['export', PARENT, '--otel', fromCli.url], { home: harness!.dataDir, cwd: dirname(path) });
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toBe(`exported ${PARENT}: 12 spans of 2 turn(s) (with 1 subagent session(s)) → ${fromCli.url}/v1/traces\n`);
    expect(detailed(fromCli.spans)).toEqual(detailed(spans));
  });

  it("a kept subagent's second turn hangs under the input_subagent call that ran it", async () => {
    const longLived: JsonScriptLike = {
      replies: [
        { when: { userIncludes: 'child task one' }, reply: { text: 'ONE' } },
        { when: { userIncludes: 'child task two' }, reply: { text: 'TWO' } },
        { when: { userIncludes: 'delegate', step: 1 }, reply: { toolCalls: [{ name: 'run_subagent', arguments: { prompt: 'child task one', keep: true } }] } },
        { when: { userIncludes: 'delegate', step: 2 }, reply: { toolCalls: [{ name: 'input_subagent', arguments: { subagentId: CHILD, prompt: 'child task two', close: true } }] } },
        { when: { userIncludes: 'delegate', step: 3 }, reply: { text: 'PARENT_DONE' } },
      ],
    };
    const live = await receiver();
    const path = await tracedDelegation(longLived, live.url);
    const spans = await live.waitForSpans(15);
    expect(spans).toHaveLength(15);
    const childTurn = [`invoke_agent harness [${CHILD}]`, [{ [`step [${CHILD}]`]: [`chat test [${CHILD}]`] }]] as const;
    expect(tree(spans)).toEqual([
      {
        [`invoke_agent harness [${PARENT}]`]: [
          { [`step [${PARENT}]`]: [`chat test [${PARENT}]`, { [`execute_tool run_subagent [${PARENT}]`]: [{ [childTurn[0]]: childTurn[1] }] }] },
          { [`step [${PARENT}]`]: [`chat test [${PARENT}]`, { [`execute_tool input_subagent [${PARENT}]`]: [{ [childTurn[0]]: childTurn[1] }] }] },
          { [`step [${PARENT}]`]: [`chat test [${PARENT}]`] },
        ],
      },
    ]);
    const turns = spans.filter((span) => span.name === 'invoke_agent harness' && span.attributes['gen_ai.conversation.id'] === CHILD).map((span) => span.attributes['harness.turn']);
    expect(turns.sort()).toEqual([1, 2]);

    const later = await receiver();
    await exportJournalTraces(PARENT, readJournal(path), { endpoint: later.url, metrics: false, store: harness!.store });
    expect(detailed(later.spans)).toEqual(detailed(spans));
  });
});
