/**
 * AbortSignal bookkeeping (issue #16, item 9): turns run with one long-lived caller signal leave
 * nothing registered on it — no abort listener, no dependent signal (`AbortSignal.any` keeps one per
 * call in the parent's internal set while the parent lives) — and an abort of it still stops a turn.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createTestHarness, runTurn } from '../../testing/index.ts';

/** Node's internal set of signals that depend on `signal` (made by `AbortSignal.any`), if any. */
function dependants(signal: AbortSignal): number {
  const symbol = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  const set = symbol === undefined ? undefined : (signal as unknown as Record<symbol, Set<unknown> | undefined>)[symbol];
  return set?.size ?? 0;
}

describe('a long-lived caller signal', () => {
  it('keeps no listener and no dependent signal after 50 turns, and still aborts a turn', async () => {
    const harness = await createTestHarness({ script: [{ text: 'ok' }] });
    try {
      const parent = new AbortController();
      const session = await harness.createSession();
      for (let i = 0; i < 50; i++) expect((await runTurn(session, `turn ${i}`, { signal: parent.signal })).end.reason).toBe('completed');
      expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
      expect(dependants(parent.signal)).toBe(0);
      parent.abort(new Error('stop'));
      expect((await runTurn(session, 'after abort', { signal: parent.signal })).end.reason).toBe('aborted');
    } finally {
      await harness.dispose();
    }
  }, 60_000);
});
