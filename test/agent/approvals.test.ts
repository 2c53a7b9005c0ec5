import { afterEach, describe, expect, it } from 'vitest';
import { assertPaired, collect, ofType, recordingTools, scriptedHarness } from './support.ts';
import type { ApproveFn, Harness } from '../../runtime/index.ts';

/** Step 1 asks for a read and a write in one message; step 2 answers. */
const mixedStep = {
  replies: [
    {
      when: { step: 1 },
      reply: {
        text: 'Working.',
        toolCalls: [
          { name: 'peek', arguments: { key: 'a' } },
          { name: 'poke', arguments: { key: 'b', value: '1' } },
        ],
      },
    },
    { when: { step: 2 }, reply: { text: 'Done.' } },
  ],
};

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.dispose();
  harness = undefined;
});

async function runWith(approve: ApproveFn | undefined, ran: string[] = []) {
  harness = await scriptedHarness(mixedStep, { tools: recordingTools(ran) });
  const session = await harness.createSession({ cwd: harness.ctx.paths.baseDir });
  const events = await collect(session.run('go', approve ? { approve } : {}));
  const decisions = ofType(events, 'approval/decided').map((e) => [e.data.callId.endsWith('_0') ? 'peek' : 'poke', e.data.decision, e.data.decidedBy]);
  const results = ofType(events, 'tool/result').map((e) => ({ isError: e.data.message.content[0].isError, code: e.data.code }));
  assertPaired(session.state.messages);
  const end = ofType(events, 'turn/end')[0]!;
  return { ran, decisions, results, end, session };
}

describe('approvals', () => {
  it('allow-all runs both calls and journals both decisions', async () => {
    const { ran, decisions, results, end } = await runWith((r) => harness!.ctx.approvals!.create('allow-all')(r));
    expect(ran).toEqual(['peek:a', 'poke:b=1']);
    expect(decisions).toEqual([
      ['peek', 'allow', 'policy:allow-all'],
      ['poke', 'allow', 'policy:allow-all'],
    ]);
    expect(results).toEqual([
      { isError: false, code: undefined },
      { isError: false, code: undefined },
    ]);
    expect(end.data.reason).toBe('completed');
  });

  it('read-only allows the read tool and, with no one to ask, denies the write tool', async () => {
    const { ran, decisions, results } = await runWith((r) => harness!.ctx.approvals!.create('read-only')(r));
    expect(ran).toEqual(['peek:a']);
    expect(decisions).toEqual([
      ['peek', 'allow', 'policy:read-only'],
      ['poke', 'deny', 'policy:read-only'],
    ]);
    expect(results).toEqual([
      { isError: false, code: undefined },
      { isError: true, code: 'DENIED' },
    ]);
  });

  it('read-only asks for the write tool when it can ask', async () => {
    const asked: string[] = [];
    const { ran, decisions } = await runWith((r) => harness!.ctx.approvals!.create('read-only', { ask: (q) => (asked.push(q.name), true) })(r));
    expect(asked).toEqual(['poke']);
    expect(ran).toEqual(['peek:a', 'poke:b=1']);
    expect(decisions).toEqual([
      ['peek', 'allow', 'policy:read-only'],
      ['poke', 'allow', 'user'],
    ]);
  });

  it('always-ask asks for every call, exactly once each, before it runs', async () => {
    const log: string[] = [];
    const { decisions } = await runWith(
      (r) =>
        harness!.ctx.approvals!.create('always-ask', {
          ask: (q) => {
            log.push(`ask:${q.name}`);
            return q.name === 'peek';
          },
        })(r),
      log,
    );
    // Each call is asked about once, before its own body; an answer given at once lets the next
    // call be asked before the first body starts (the calls approved at once share a checkpoint).
    expect(log).toEqual(['ask:peek', 'ask:poke', 'peek:a']);
    expect(decisions).toEqual([
      ['peek', 'allow', 'user'],
      ['poke', 'deny', 'user'],
    ]);
  });

  it('always-ask with an answer that is waited for: the call approved before it runs meanwhile', async () => {
    const log: string[] = [];
    const { decisions } = await runWith(
      (r) =>
        harness!.ctx.approvals!.create('always-ask', {
          ask: async (q) => {
            log.push(`ask:${q.name}`);
            // poke's answer comes only once peek has run: peek must not wait for it.
            if (q.name === 'poke') while (!log.includes('peek:a')) await new Promise((resolve) => setImmediate(resolve));
            log.push(`answer:${q.name}`);
            return q.name === 'peek';
          },
        })(r),
      log,
    );
    expect(log).toEqual(['ask:peek', 'answer:peek', 'ask:poke', 'peek:a', 'answer:poke']);
    expect(decisions).toEqual([
      ['peek', 'allow', 'user'],
      ['poke', 'deny', 'user'],
    ]);
  });

  it('deny-all runs nothing; every call still gets one error result', async () => {
    const { ran, decisions, results, end } = await runWith((r) => harness!.ctx.approvals!.create('deny-all')(r));
    expect(ran).toEqual([]);
    expect(decisions.map((d) => d[1])).toEqual(['deny', 'deny']);
    expect(results).toEqual([
      { isError: true, code: 'DENIED' },
      { isError: true, code: 'DENIED' },
    ]);
    expect(end.data.reason).toBe('completed');
  });

  it('an approver that throws counts as deny', async () => {
    const { ran, decisions } = await runWith(() => {
      throw new Error('approver crashed');
    });
    expect(ran).toEqual([]);
    expect(decisions).toEqual([
      ['peek', 'deny', 'approver-threw'],
      ['poke', 'deny', 'approver-threw'],
    ]);
  });

  it('an answer given at once, as a promise, as a thenable or as a rejection decides the same way (the loop awaits only a promise)', async () => {
    const answers: ApproveFn[] = [
      (r) => (r.name === 'peek' ? 'allow' : { decision: 'deny', reason: 'no writes' }),
      async (r) => (r.name === 'peek' ? 'allow' : { decision: 'deny', reason: 'no writes' }),
      // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a Promise, on purpose
      (r) => ({ then: (resolve: (answer: unknown) => void) => resolve(r.name === 'peek' ? 'allow' : { decision: 'deny', reason: 'no writes' }) }) as never,
    ];
    for (const approve of answers) {
      const { ran, decisions, results } = await runWith(approve);
      expect(ran).toEqual(['peek:a']);
      expect(decisions).toEqual([
        ['peek', 'allow', 'approver'],
        ['poke', 'deny', 'approver'],
      ]);
      expect(results).toEqual([
        { isError: false, code: undefined },
        { isError: true, code: 'DENIED' },
      ]);
      await harness!.dispose();
      harness = undefined;
    }
    const { ran, decisions } = await runWith(() => Promise.reject(new Error('approver offline')));
    expect(ran).toEqual([]);
    expect(decisions).toEqual([
      ['peek', 'deny', 'approver-threw'],
      ['poke', 'deny', 'approver-threw'],
    ]);
  });

  it('no approver denies every call', async () => {
    const { ran, decisions } = await runWith(undefined);
    expect(ran).toEqual([]);
    expect(decisions).toEqual([
      ['peek', 'deny', 'no-approver'],
      ['poke', 'deny', 'no-approver'],
    ]);
  });

  it('every decision is in the journal on disk', async () => {
    const { session } = await runWith((r) => harness!.ctx.approvals!.create('read-only')(r));
    await session.close();
    const { readJournal } = await import('../../runtime/index.ts');
    const onDisk = [];
    for await (const event of readJournal(session.path)) if (event.type === 'approval/decided') onDisk.push(event.data.decision);
    expect(onDisk).toEqual(['allow', 'deny']);
  });

  it('an unknown policy is a clear error', async () => {
    harness = await scriptedHarness(mixedStep);
    expect(() => harness!.ctx.approvals!.create('sometimes')).toThrow(/UNKNOWN_POLICY|No approval policy "sometimes"/);
  });
});
