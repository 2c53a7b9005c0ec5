/**
 * plugins/llm-retry — the one retry layer (seed 002 14.4: retries live in `agent/request-error`,
 * never in the seam or the SDKs; seed 000's LLMOutcome table says what is retried).
 *
 * For a failed model call it decides, from the prepared call's `ResolvedRetryPolicy` (with this
 * plugin's config as an extra layer): retry codes the policy names (`always` mode: every code) except
 * `AUTH` and `ABORTED`, at most `maxRetries` times, after an exponential backoff with jitter. A
 * provider's `retry-after` within `maxDelayMs` replaces the local delay; a longer one fails at once,
 * visibly, instead of waiting. Before waiting it journals `llm/retry {attempt, maxRetries, delayMs,
 * failure}`; an abort during the wait ends it at once. The loop re-runs the call in the same step.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { definePlugin, isRetryableCode, llmFailure, resolveRetryPolicy, z, type ResolvedRetryPolicy } from '../../runtime/index.ts';

/** The backoff before retry number `attempt` (1-based), in ms, before jitter: initial × 2^(attempt−1), capped. */
export function backoffDelayMs(policy: ResolvedRetryPolicy, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, attempt - 1));
  const spread = base * policy.jitterRatio;
  return Math.max(0, Math.min(policy.maxDelayMs, Math.round(base - spread + random() * 2 * spread)));
}

export default definePlugin({
  name: 'llm-retry',
  config: z
    .strictObject({
      mode: z.enum(['normal', 'always']).optional(),
      maxRetries: z.number().int().min(0).max(100).optional(),
      retryableCodes: z.array(z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'error codes are UPPER_SNAKE, e.g. RATE_LIMIT')).optional(),
      initialDelayMs: z.number().min(0).optional(),
      maxDelayMs: z.number().min(0).optional(),
      jitterRatio: z.number().min(0).max(1).optional(),
    })
    .default({}),
  setup(ctx, config) {
    ctx.on('agent/request-error', async (payload, next) => {
      const policy = resolveRetryPolicy(payload.prepared.retryPolicy, config);
      const { failure, attempt, signal } = payload;
      if (signal.aborted || attempt > policy.maxRetries || !isRetryableCode(policy, failure.code)) return next();
      let delayMs = backoffDelayMs(policy, attempt);
      if (failure.providerRetryAfterMs !== undefined) {
        if (failure.providerRetryAfterMs > policy.maxDelayMs) {
          const { code, message, ...details } = failure;
          const seconds = (failure.providerRetryAfterMs / 1000).toFixed(1);
          const explained = `${message} — the provider asked to retry after ${seconds} s, beyond the retry limit of ${policy.maxDelayMs / 1000} s (maxDelayMs), so the call was not retried.`;
          return { action: 'fail', failure: llmFailure(code, explained, details) };
        }
        delayMs = failure.providerRetryAfterMs;
      }
      await payload.session.append('llm/retry', { turn: payload.turn, step: payload.step, attempt, maxRetries: policy.maxRetries, delayMs, failure });
      try {
        await sleep(delayMs, undefined, { signal });
      } catch {
        return next(); // aborted during the wait: the loop sees the signal and ends the turn `aborted`
      }
      return { action: 'retry' };
    });
  },
});
