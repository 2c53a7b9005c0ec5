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
