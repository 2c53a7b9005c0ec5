import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApprovalRequest, ForwardedEvent, Harness, TokenUsage } from '../../runtime/index.ts';
import { collect, delegation, journalOf, ofType, readAll, subagentHarness } from './support.ts';

let harness: (Harness & { dir: string }) | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

const sumUsage = (usages: readonly (TokenUsage | undefined)[]): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const usage of usages) for (const [key, value] of Object.entries(usage ?? {})) if (typeof value === 'number') out[key] = (out[key] ?? 0) + value;
  return out;
};

describe('run_subagent', () => {
  it('spawns a linked child whose tool call is asked once with its origin, forwards its events and rolls its usage up', async () => {
    const ran: string[] = [];
    harness = await subagentHarness(delegation, { ran });
    const asked: ApprovalRequest[] = [];
    const approve = harness.ctx.approvals!.create('read-only', {
      ask: (request) => {
        asked.push(request);
        return true;
      },
    });
    const parent = await harness.createSession({ cwd: harness.dir });
    const events = (await collect(parent.run('delegate this', { approve }))) as ForwardedEvent[];
    const own = events.filter((e) => e.origin === undefined);
    const forwarded = events.filter((e) => e.origin !== undefined);
    expect(ofType(own, 'turn/end').map((e) => e.data.reason)).toEqual(['completed']);
    expect(ofType(own, 'assistant/message').at(-1)!.data.message.content).toEqual([{ type: 'text', text: 'PARENT_DONE' }]);

    // The link, both ways.
    const spawn = ofType(own, 'subagent/spawn');
    expect(spawn).toHaveLength(1);
    const childId = spawn[0]!.data.childSessionId;
    expect(childId).toBe(`${parent.id}.sub1`);
    expect(spawn[0]!.ignorable).toBe(true);
    expect(spawn[0]!.data).toMatchObject({ depth: 1, provider: 'scripted', model: 'test', mode: 'one-shot', callId: ofType(own, 'tool/call')[0]!.data.callId });
    const child = await readAll(journalOf(harness, childId));
    expect(child.header.parentSession).toEqual({ sessionId: parent.id, callId: spawn[0]!.data.callId, depth: 1 });
    expect(child.header.cwd).toBe(parent.session.cwd);
    expect(ofType(child.events, 'turn/end').map((e) => e.data.reason)).toEqual(['completed']);

    // One question, from the child, with the origin marker; the tool ran once.
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ name: 'poke', sessionId: childId, origin: [childId] });
    expect(ran).toEqual(['poke:b=1']);
    expect(ofType(child.events, 'approval/decided').map((e) => [e.data.decision, e.data.decidedBy])).toEqual([['allow', 'user']]);

    // The child's events reached the parent's consumer, every one marked, none journaled in the parent.
    expect(forwarded.map((e) => e.seq)).toEqual(child.events.map((e) => e.seq));
    expect(new Set(forwarded.map((e) => e.origin!.join('>')))).toEqual(new Set([childId]));
    const parentJournal = await readAll(parent.path);
    expect(parentJournal.events.map((e) => e.seq)).toEqual(own.map((e) => e.seq));

    // The parent's tool result is the child's answer.
    const result = ofType(own, 'tool/result')[0]!.data.message.content[0]!;
    expect(result).toMatchObject({ type: 'tool-result', isError: false, content: [{ type: 'text', text: 'CHILD_OK' }] });
    const end = ofType(own, 'subagent/end')[0]!.data;
    expect(end).toMatchObject({ childSessionId: childId, childTurn: 1, reason: 'completed', closed: true });

    // Usage: the child's own, rolled up into the parent's meter.
    const childUsage = sumUsage(ofType(child.events, 'assistant/message').map((e) => e.data.usage));
    const parentOwn = sumUsage(ofType(parentJournal.events, 'assistant/message').map((e) => e.data.usage));
    expect(childUsage).toEqual({ inputTokens: 100, outputTokens: 10 });
    expect(end.usage).toEqual(childUsage);
    const meter = harness.ctx.tokenMeter!;
    expect(meter.session(childId).totals).toEqual(childUsage);
    expect(meter.session(parent.id).totals).toEqual(sumUsage([parentOwn, childUsage]));
    expect(meter.session(parent.id).totals).toEqual({ inputTokens: 350, outputTokens: 35 });
  });

  it('prompt() counts the child usage in the turn and answers with the parent reply', async () => {
    harness = await subagentHarness(delegation);
    const parent = await harness.createSession({ cwd: harness.dir });
    const result = await parent.prompt('delegate this', { approve: () => 'allow' });
    expect(result.text).toBe('PARENT_DONE');
    expect(result.stepCount).toBe(2);
    expect(result.usage).toEqual({ inputTokens: 350, outputTokens: 35 });
  });

  it('an approver that throws for the child denies its call (and the child still answers)', async () => {
    const ran: string[] = [];
    harness = await subagentHarness(delegation, { ran });
    const parent = await harness.createSession({ cwd: harness.dir });
    // The parent's own call needs an approver to run at all: allow only run_subagent, throw for the child's.
    const asked: string[] = [];
    await parent.prompt('delegate this', {
      approve: (request) => {
        asked.push(`${request.name}:${request.origin?.join('>') ?? ''}`);
        if (request.origin !== undefined) throw new Error('no questions from subagents');
        return 'allow';
      },
    });
    expect(asked).toEqual(['run_subagent:', `poke:${parent.id}.sub1`]);
    expect(ran).toEqual([]);
    const child = await readAll(journalOf(harness, `${parent.id}.sub1`));
    expect(ofType(child.events, 'approval/decided').map((e) => [e.data.decision, e.data.decidedBy])).toEqual([['deny', 'approver-threw']]);
    expect(ofType(child.events, 'tool/result')[0]!.data.code).toBe('DENIED');
  });

  it('refuses depth 2 with a failed result that says so', async () => {
    const nested = {
      replies: [
        { when: { userIncludes: 'child task', step: 1 }, reply: { toolCalls: [{ name: 'run_subagent', arguments: { prompt: 'grandchild task' } }] } },
        { when: { userIncludes: 'child task', step: 2 }, reply: { text: 'CHILD_OK' } },
        ...delegation.replies.slice(2),
      ],
    };
    harness = await subagentHarness(nested);
    const parent = await harness.createSession({ cwd: harness.dir });
    const result = await parent.prompt('delegate this', { approve: () => 'allow' });
    expect(result.text).toBe('PARENT_DONE');
    const child = await readAll(journalOf(harness, `${parent.id}.sub1`));
    const refused = ofType(child.events, 'tool/result')[0]!.data;
    expect(refused.code).toBe('SUBAGENT_DEPTH_EXCEEDED');
    expect(refused.message.content[0]).toMatchObject({ isError: true });
    const text = JSON.stringify(refused.message.content);
    expect(text).toContain('depth 2 would exceed the nesting limit of 1');
    expect(ofType(child.events, 'subagent/spawn')).toEqual([]);
    await expect(readAll(journalOf(harness, `${parent.id}.sub1.sub1`))).rejects.toMatchObject({ code: 'JOURNAL_NOT_FOUND' });
  });

  it('allows depth 2 when maxDepth is 2, with two hops of origin', async () => {
    const nested = {
      replies: [
        { when: { userIncludes: 'grandchild task', step: 1 }, reply: { toolCalls: [{ name: 'poke', arguments: { key: 'g', value: '2' } }] } },
        { when: { userIncludes: 'grandchild task', step: 2 }, reply: { text: 'GRANDCHILD_OK' } },
        { when: { userIncludes: 'child task', step: 1 }, reply: { toolCalls: [{ name: 'run_subagent', arguments: { prompt: 'grandchild task' } }] } },
        { when: { userIncludes: 'child task', step: 2 }, reply: { text: 'CHILD_OK' } },
        ...delegation.replies.slice(2),
      ],
    };
    harness = await subagentHarness(nested, { maxDepth: 2 });
    const parent = await harness.createSession({ cwd: harness.dir });
    const asked: ApprovalRequest[] = [];
    const events = (await collect(parent.run('delegate this', { approve: (r) => (asked.push(r), 'allow') }))) as ForwardedEvent[];
    const child = `${parent.id}.sub1`;
    const grandchild = `${child}.sub1`;
    expect(asked.map((r) => [r.name, r.sessionId, r.origin])).toEqual([
      ['run_subagent', parent.id, undefined],
      ['run_subagent', child, [child]],
      ['poke', grandchild, [child, grandchild]],
    ]);
    expect(new Set(events.map((e) => e.origin?.join('>') ?? ''))).toEqual(new Set(['', child, `${child}>${grandchild}`]));
    const header = (await readAll(journalOf(harness, grandchild))).header;
    expect(header.parentSession).toMatchObject({ sessionId: child, depth: 2 });
    // Rolled up two levels.
    const meter = harness.ctx.tokenMeter!;
    const g = meter.session(grandchild).totals;
    const c = meter.session(child).totals;
    expect(c.outputTokens).toBeGreaterThan(g.outputTokens!);
    expect(meter.session(parent.id).totals.outputTokens).toBeGreaterThan(c.outputTokens!);
  });

  it('keeps a long-lived subagent that input_subagent drives with further prompts', async () => {
    const longLived = {
      replies: [
        { when: { userIncludes: 'child task one' }, reply: { text: 'ONE' } },
        { when: { userIncludes: 'child task two' }, reply: { text: 'TWO' } },
        { when: { userIncludes: 'delegate', step: 1 }, reply: { toolCalls: [{ name: 'run_subagent', arguments: { prompt: 'child task one', keep: true } }] } },
        { when: { userIncludes: 'delegate', step: 2 }, reply: { toolCalls: [{ name: 'input_subagent', arguments: { subagentId: 'SUB', prompt: 'child task two', close: true } }] } },
        { when: { userIncludes: 'delegate', step: 3 }, reply: { toolCalls: [{ name: 'input_subagent', arguments: { subagentId: 'SUB', prompt: 'child task three' } }] } },
        { when: { userIncludes: 'delegate', step: 4 }, reply: { text: 'PARENT_DONE' } },
      ],
    };
    harness = await subagentHarness(longLived);
    const parent = await harness.createSession({ cwd: harness.dir });
    // The script names the child by the id the plugin gives it.
    const script = JSON.stringify(longLived).replaceAll('SUB', `${parent.id}.sub1`);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(harness.dir, 'script.json'), script);
    await harness.host.reload('llm-scripted');
    const result = await parent.prompt('delegate this', { approve: () => 'allow' });
    expect(result.text).toBe('PARENT_DONE');
    const own = await readAll(parent.path);
    const results = ofType(own.events, 'tool/result').map((e) => [e.data.code, JSON.stringify(e.data.message.content)]);
    expect(results[0]![1]).toContain('ONE');
    expect(results[0]![1]).toContain(`subagent ${parent.id}.sub1 is kept`);
    expect(results[1]).toEqual([undefined, expect.stringContaining('TWO')]);
    // Closed after its second turn: a third prompt is refused.
    expect(results[2]![0]).toBe('UNKNOWN_SUBAGENT');
    expect(ofType(own.events, 'subagent/input').map((e) => e.data.childSessionId)).toEqual([`${parent.id}.sub1`]);
    const child = await readAll(journalOf(harness, `${parent.id}.sub1`));
    expect(ofType(child.events, 'turn/end').map((e) => [e.data.turn, e.data.reason])).toEqual([
      [1, 'completed'],
      [2, 'completed'],
    ]);
    expect(ofType(own.events, 'subagent/end').map((e) => [e.data.childTurn, e.data.closed])).toEqual([
      [1, false],
      [2, true],
    ]);
  });

  it('aborting the parent mid-child ends both journals aborted', async () => {
    const waiting = {
      replies: [
        { when: { userIncludes: 'child task', step: 1 }, reply: { toolCalls: [{ name: 'wait', arguments: {} }] } },
        { when: { userIncludes: 'child task' }, reply: { text: 'never' } },
        ...delegation.replies.slice(2),
      ],
    };
    harness = await subagentHarness(waiting);
    const parent = await harness.createSession({ cwd: harness.dir });
    const controller = new AbortController();
    const events = (await collect(parent.run('delegate this', { approve: () => 'allow', signal: controller.signal }), (event) => {
      const e = event as ForwardedEvent;
      if (e.origin !== undefined && e.type === 'tool/start') controller.abort();
    })) as ForwardedEvent[];
    expect(
      ofType(
        events.filter((e) => e.origin === undefined),
        'turn/end',
      ).map((e) => e.data.reason),
    ).toEqual(['aborted']);
    const childId = `${parent.id}.sub1`;
    const child = await readAll(journalOf(harness, childId));
    expect(ofType(child.events, 'turn/end').map((e) => e.data.reason)).toEqual(['aborted']);
    const own = await readAll(parent.path);
    expect(ofType(own.events, 'turn/end').map((e) => e.data.reason)).toEqual(['aborted']);
    expect(ofType(own.events, 'tool/result')[0]!.data.code).toBe('ABORTED');
    // The parent's result was journaled after the child's turn ended.
    expect(ofType(own.events, 'subagent/end')[0]!.data).toMatchObject({ childSessionId: childId, reason: 'aborted' });
    expect(own.events.findIndex((e) => e.type === 'subagent/end')).toBeLessThan(own.events.findIndex((e) => e.type === 'tool/result'));
  });
});

describe('the CLI footer', () => {
  it('counts the child usage live (forwarded events) and from the journal when resumed, the same', async () => {
    const { UsageTally } = await import('../../cli/usage.ts');
    const pc = (await import('picocolors')).default;
    const io = { c: pc.createColors(false) } as never;
    harness = await subagentHarness(delegation);
    const parent = await harness.createSession({ cwd: harness.dir });
    const live = new UsageTally();
    live.startTurn();
    for await (const event of parent.run('delegate this', { approve: () => 'allow' })) live.add(event);
    const resumed = await UsageTally.of(parent.path);
    const footer = live.footer(harness, io);
    expect(footer).toContain('this turn: 350 in · 35 out');
    expect(footer).toContain('session:   350 in · 35 out');
    expect(footer).toContain('(1 turn)');
    expect(resumed.footer(harness, io).split('\n')[1]).toBe(footer.split('\n')[1]);
  });
});
