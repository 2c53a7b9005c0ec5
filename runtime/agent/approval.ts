/** The approver's contract (seed 000 "ApproveFn"): what it is asked and what it may answer. */

/** One complete tool call, as the approver sees it (seed 000 `ApproveFn`). */
export interface ApprovalRequest {
  readonly sessionId: string;
  readonly turn: number;
  readonly step: number;
  readonly callId: string;
  readonly name: string;
  /** Raw JSON arguments, as the model wrote them. */
  readonly arguments: string;
  /** The parsed input. */
  readonly input: unknown;
  readonly permission: 'read' | 'write';
  readonly description: string;
  /**
   * Set when the call was made by a child session (a subagent) and the question was passed up to
   * its parent's approver (seed 000 "ApproveFn": approvals inherited with an origin marker): the
   * child session ids it came through, one hop per level, nearest first. `sessionId` is the
   * session that made the call.
   */
  readonly origin?: readonly string[];
}

/** The outcome of an approval. */
export type ApprovalDecision = 'allow' | 'deny';
/** What an approver returns: a decision, or one with who decided (journaled as `decidedBy`) and why. */
export type ApprovalAnswer = ApprovalDecision | { readonly decision: ApprovalDecision; readonly decidedBy?: string; readonly reason?: string };

/**
 * Called exactly once per complete tool call that could run, before it runs. Throwing counts as
 * `deny`; no approver means every call is denied.
 */
export type ApproveFn = (request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>;
