/**
 * Approval policies (seed 000 "ApproveFn"; the CLI's `--approve <policy>`).
 *
 * Provides `ctx.approvals`: `create(policy, { ask })` returns an `ApproveFn` for the agent loop.
 * - `allow-all`: every call runs.
 * - `read-only`: `read` tools run; anything else is asked (`ask`), or denied when there is no one to ask.
 * - `always-ask`: every call is asked; denied when there is no one to ask.
 * - `deny-all`: nothing runs.
 * Decisions carry who decided (`policy:<name>`, or `user` for an asked call); the loop journals them
 * as `approval/decided`.
 */
import { definePlugin, HarnessError, z, type ApprovalAnswer, type ApprovalRequest, type ApproveFn } from '../../runtime/index.ts';

export const POLICY_NAMES = ['allow-all', 'read-only', 'always-ask', 'deny-all'] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

/**
 * Asks a person about one call: `true` (or `{ allow: true }`) allows. A `reason` with a no is
 * journaled as the decision's reason (e.g. "no answer (Ctrl-C)"); a bare `false` is "the user said no".
 */
export type AskFn = (request: ApprovalRequest) => AskAnswer | Promise<AskAnswer>;
export type AskAnswer = boolean | { readonly allow: boolean; readonly reason?: string };

export interface ApprovalPolicies {
  readonly names: readonly PolicyName[];
  /** The configured default policy. */
  readonly defaultPolicy: PolicyName;
  /** @throws HarnessError `UNKNOWN_POLICY` naming the known policies. */
  create(policy?: string, options?: { ask?: AskFn }): ApproveFn;
}

declare global {
  namespace Harness {
    interface Services {
      approvals?: ApprovalPolicies;
    }
  }
}

export function createPolicy(policy: string, options: { ask?: AskFn } = {}): ApproveFn {
  const by = `policy:${policy}`;
  const ask = async (request: ApprovalRequest, why: string): Promise<ApprovalAnswer> => {
    if (options.ask === undefined) return { decision: 'deny', decidedBy: by, reason: `${why}, and there is no one to ask` };
    const answer = await options.ask(request);
    const allow = typeof answer === 'boolean' ? answer : answer.allow === true;
    if (allow) return { decision: 'allow', decidedBy: 'user' };
    return { decision: 'deny', decidedBy: 'user', reason: (typeof answer === 'object' ? answer.reason : undefined) ?? 'the user said no' };
  };
  switch (policy) {
    case 'allow-all':
      return () => ({ decision: 'allow', decidedBy: by });
    case 'deny-all':
      return () => ({ decision: 'deny', decidedBy: by, reason: 'the deny-all policy runs no tools' });
    case 'read-only':
      return (request) => (request.permission === 'read' ? { decision: 'allow', decidedBy: by } : ask(request, `${request.name} can change the workspace`));
    case 'always-ask':
      return (request) => ask(request, "every call needs a person's yes");
    default:
      throw new HarnessError('UNKNOWN_POLICY', `No approval policy "${policy}". Use one of: ${POLICY_NAMES.join(', ')}.`);
  }
}

export default definePlugin({
  name: 'approvals',
  config: z.strictObject({ default: z.enum(POLICY_NAMES).default('read-only') }).default({ default: 'read-only' }),
  setup(ctx, config) {
    ctx.provide('approvals', {
      names: POLICY_NAMES,
      defaultPolicy: config.default,
      create: (policy = config.default, options) => createPolicy(policy, options),
    });
  },
});
