/**
 * Calls running under one caller signal share one `abort` listener on it (runtime/agent/closeout.ts
 * `watchAbort`): Node's EventTarget walks its listener list on every add and remove, so a listener
 * per call was quadratic in the calls of a message, which start together after their shared
 * checkpoint (issue 22.3).
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { runTool } from '../../runtime/agent/closeout.ts';
import { defineTool, z } from '../../runtime/index.ts';

/** Waits until its call's own signal aborts (or `release` resolves), then reports. */
function waitingTool(release: Promise<void>) {
  return defineTool({
    name: 'wait',
    description: 'Waits.',
    input: z.object({}),
    permission: 'read',
    execute: async (_input, context) => {
      await Promise.race([release, new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }))]);
      return 'released';
    },
  });
}

const options = (signal: AbortSignal, n: number) => ({ callId: `c${n}`, sessionId: 's', cwd: process.cwd(), signal });

describe('calls under one signal', () => {
  it('100 running calls put one listener on the caller’s signal, and none once they end', async () => {
    const caller = new AbortController();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const tool = waitingTool(released);
    const calls = Array.from({ length: 100 }, (_, n) => runTool(tool, {}, options(caller.signal, n)));
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(1);
    release();
    const outcomes = await Promise.all(calls);
    expect(outcomes.every((outcome) => !outcome.isError)).toBe(true);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    // A later call on the same signal watches it again.
    const again = runTool(tool, {}, options(caller.signal, 100));
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(1);
    expect((await again).isError).toBe(false);
  });

  it('an abort reaches every running call once; calls that ended earlier are not touched', async () => {
    const caller = new AbortController();
    const quick = defineTool({ name: 'quick', description: 'Returns.', input: z.object({}), permission: 'read', execute: () => 'done' });
    const early = await runTool(quick, {}, options(caller.signal, 0));
    expect(early.isError).toBe(false);
    const tool = waitingTool(new Promise<void>(() => {}));
    const calls = Array.from({ length: 50 }, (_, n) => runTool(tool, {}, options(caller.signal, n + 1)));
    caller.abort();
    const outcomes = await Promise.all(calls);
    expect(outcomes.map((outcome) => outcome.code)).toEqual(Array.from({ length: 50 }, () => 'ABORTED'));
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });
});

describe('a call’s own signal', () => {
  /** Counts the AbortControllers made while `body` runs. */
  async function countingControllers<T>(body: () => Promise<T>): Promise<{ result: T; made: number }> {
    const Original = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        made++;
      }
    };
    try {
      return { result: await body(), made };
    } finally {
      globalThis.AbortController = Original;
    }
  }

  it('is made only for a body that reads it', async () => {
    const caller = new AbortController();
    const quiet = defineTool({ name: 'quiet', description: 'Returns.', input: z.object({}), permission: 'read', execute: () => 'done' });
    const reading = defineTool({ name: 'reading', description: 'Reads its signal.', input: z.object({}), permission: 'read', execute: (_input, context) => String(context.signal.aborted) });
    const quietRun = await countingControllers(() => Promise.all(Array.from({ length: 10 }, (_, n) => runTool(quiet, {}, options(caller.signal, n)))));
    expect(quietRun.result.map((outcome) => outcome.isError)).toEqual(Array.from({ length: 10 }, () => false));
    expect(quietRun.made).toBe(0);
    const readingRun = await countingControllers(() => runTool(reading, {}, options(caller.signal, 10)));
    expect(readingRun.result.content).toEqual([{ type: 'text', text: 'false' }]);
    expect(readingRun.made).toBe(1);
  });

  it('read first after the call was stopped or ended, is born aborted with the reason', async () => {
    const caller = new AbortController();
    let late: (() => AbortSignal) | undefined;
    const keeper = defineTool({
      name: 'keeper',
      description: 'Keeps its context, reads nothing.',
      input: z.object({}),
      permission: 'read',
      execute: async (_input, context) => {
        late = () => context.signal;
        await new Promise(() => {}); // waits for the abort
        return 'never';
      },
    });
    const aborted = runTool(keeper, {}, options(caller.signal, 0));
    await new Promise((resolve) => setImmediate(resolve));
    caller.abort();
    expect((await aborted).code).toBe('ABORTED');
    expect(late!().aborted).toBe(true);
    expect((late!().reason as { code?: string }).code).toBe('ABORTED');

    const timed = defineTool({ ...keeper, name: 'timed', timeoutMs: 20 });
    expect((await runTool(timed, {}, options(new AbortController().signal, 1))).code).toBe('TIMEOUT');
    expect((late!().reason as { code?: string }).code).toBe('TIMEOUT');

    const ended = defineTool({
      name: 'ended',
      description: 'Returns, keeping its context.',
      input: z.object({}),
      permission: 'read',
      execute: (_input, context) => {
        late = () => context.signal;
        return 'done';
      },
    });
    expect((await runTool(ended, {}, options(new AbortController().signal, 2))).isError).toBe(false);
    expect(late!().aborted).toBe(true);
    expect((late!().reason as { code?: string }).code).toBe('TOOL_FINISHED');
  });
});

describe('a call’s context, destructured', () => {
  it('output, forward and signal work taken off the context, as a body may write them', async () => {
    const forwarded: string[] = [];
    const outputs: string[] = [];
    const tool = defineTool({
      name: 'destructuring',
      description: 'Streams, forwards, reads its signal, all destructured.',
      input: z.object({}),
      permission: 'read',
      execute: (_input, { output, forward, signal }) => {
        output('one ');
        output('two');
        forward?.({ type: 'child/event' } as never, 'child-1');
        return { notes: [`aborted: ${signal.aborted}`] };
      },
    });
    const outcome = await runTool(
      tool,
      {},
      {
        ...options(new AbortController().signal, 0),
        onOutput: (text) => outputs.push(text),
        onForward: (_event, hop) => forwarded.push(hop),
      },
    );
    expect(outcome.isError).toBe(false);
    expect(outcome.content).toEqual([
      { type: 'text', text: 'one two' },
      { type: 'text', text: '\naborted: false' },
    ]);
    expect(outputs).toEqual(['one ', 'two']);
    expect(forwarded).toEqual(['child-1']);
  });
});
