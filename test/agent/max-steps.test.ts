/**
 * The maxSteps rule (issue #16, item 10): a positive integer is the limit of steps per turn, 0 or a
 * negative one means no limit (as peers do), undefined is the default 100; a non-integer is refused
 * by the config schema (`INVALID_CONFIG`) and by a session (`INVALID_ARGUMENTS`).
 */
import { describe, expect, it } from 'vitest';
import { createHarness, defineTool, z } from '../../runtime/index.ts';
import { resolveMaxSteps } from '../../runtime/agent/session.ts';
import { createTestHarness, runTurn } from '../../testing/index.ts';

const ping = defineTool({ name: 'ping', description: 'ping', input: z.strictObject({}), permission: 'read', execute: async () => 'pong' });
/** Calls `ping` for the first `calls` steps, then answers. */
const script = (calls: number) => (context: { step: number }) => (context.step <= calls ? { toolCalls: [{ name: 'ping', arguments: {} }] } : { text: 'done' });

describe('maxSteps', () => {
  it('resolves undefined → 100, positive → itself, 0 and negative → no limit, a non-integer → error', () => {
    expect(resolveMaxSteps(undefined)).toBe(100);
    expect(resolveMaxSteps(3)).toBe(3);
    expect(resolveMaxSteps(0)).toBe(Infinity);
    expect(resolveMaxSteps(-1)).toBe(Infinity);
    expect(() => resolveMaxSteps(2.5)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENTS' }));
  });

  for (const [maxSteps, calls, reason] of [
    [2, 5, 'error'],
    [-1, 5, 'completed'],
    [0, 5, 'completed'],
    [6, 5, 'completed'],
  ] as const) {
    it(`maxSteps ${maxSteps} with ${calls} tool steps ends the turn ${reason}`, async () => {
      const harness = await createTestHarness({ script: script(calls), tools: [ping] });
      try {
        const session = await harness.createSession({ maxSteps });
        const result = await runTurn(session, 'go');
        expect(result.end.reason).toBe(reason);
        if (reason === 'error') expect(result.end.failure?.code).toBe('MAX_STEPS_EXCEEDED');
        else expect(result.toolCalls).toHaveLength(calls);
      } finally {
        await harness.dispose();
      }
    });
  }

  it('is a config key: an integer is accepted, anything else is INVALID_CONFIG', async () => {
    const ok = await createHarness({ config: { maxSteps: -1, plugins: [] } });
    await ok.dispose();
    await expect(createHarness({ config: { maxSteps: 1.5, plugins: [] } })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
    await expect(createHarness({ config: { maxSteps: '10' as never, plugins: [] } })).rejects.toMatchObject({ code: 'INVALID_CONFIG' });
  });
});
