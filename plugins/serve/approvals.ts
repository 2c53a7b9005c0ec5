/**
 * Approvals answered from outside the process (seed 000 "ApproveFn": each complete tool call is
 * asked exactly once; DESIGN "Serving"). A served turn's approver parks each call it has to ask
 * about here; an HTTP client (or an embedder) answers it once. An unanswered call is denied when its
 * timeout passes or its turn is aborted. The loop journals the decision (`approval/decided`) as for
 * any approver; the question itself is journaled as `approval/requested` so a viewer can see it.
 */
import { HarnessError, type ApprovalAnswer, type ApprovalRequest } from '../../runtime/index.ts';

/** A call waiting for a person's answer, as clients see it. */
export interface PendingApproval extends Pick<ApprovalRequest, 'sessionId' | 'turn' | 'step' | 'callId' | 'name' | 'arguments' | 'permission'> {
  /** When the question was parked (absolute ms). */
  readonly requestedAtMs: number;
  /** When the call is denied unanswered (absolute ms). */
  readonly deadlineAtMs: number;
}

/** An answer from a client. */
export interface ApprovalReply {
  readonly decision: 'allow' | 'deny';
  /** Journaled with a deny (a short free text). */
  readonly reason?: string;
}

interface Waiting {
  readonly pending: PendingApproval;
  readonly settle: (answer: ApprovalAnswer) => void;
}

/** Who decided, as `approval/decided.decidedBy` records it. */
export const DECIDED_BY_CLIENT = 'user:http';
export const DECIDED_BY_TIMEOUT = 'serve:timeout';
export const DECIDED_BY_ABORT = 'serve:abort';

/**
 * The parked calls of every session a server runs, and the calls already answered (so a second
 * answer is a conflict, not "not found").
 */
export class ApprovalDesk {
  private readonly waiting = new Map<string, Waiting>();
  /** `sessionId\0callId` of calls decided here, most recent last (bounded). */
  private readonly decided = new Map<string, 'allow' | 'deny'>();
  private static readonly DECIDED_KEEP = 10_000;

  /**
   * Parks `request` until it is answered, its `timeoutMs` passes (deny) or `signal` aborts (deny).
   * `onParked` is told once the call is visible to {@link answer} (the server journals it then).
   */
  ask(request: ApprovalRequest, options: { timeoutMs: number; signal: AbortSignal; onParked?: (pending: PendingApproval) => void | Promise<void> }): Promise<ApprovalAnswer> {
    const key = keyOf(request.sessionId, request.callId);
    const requestedAtMs = Date.now();
    const pending: PendingApproval = Object.freeze({
      sessionId: request.sessionId,
      turn: request.turn,
      step: request.step,
      callId: request.callId,
      name: request.name,
      arguments: request.arguments,
      permission: request.permission,
      requestedAtMs,
      deadlineAtMs: requestedAtMs + options.timeoutMs,
    });
    return new Promise<ApprovalAnswer>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = (answer: ApprovalAnswer): void => {
        if (this.waiting.get(key)?.settle !== settle) return;
        this.waiting.delete(key);
        clearTimeout(timer);
        options.signal.removeEventListener('abort', onAbort);
        this.remember(key, typeof answer === 'string' ? answer : answer.decision);
        resolve(answer);
      };
      const onAbort = (): void => settle({ decision: 'deny', decidedBy: DECIDED_BY_ABORT, reason: 'the turn was aborted before anyone answered' });
      this.waiting.set(key, { pending, settle });
      timer = setTimeout(() => settle({ decision: 'deny', decidedBy: DECIDED_BY_TIMEOUT, reason: `no answer within ${options.timeoutMs} ms` }), options.timeoutMs);
      timer.unref?.();
      if (options.signal.aborted) return onAbort();
      options.signal.addEventListener('abort', onAbort, { once: true });
      void Promise.resolve(options.onParked?.(pending)).catch(() => undefined);
    });
  }

  /**
   * Answers a parked call, exactly once.
   * @throws HarnessError `APPROVAL_ALREADY_DECIDED` (409) when it was answered, timed out or
   *   aborted; `APPROVAL_NOT_FOUND` (404) when no such call waits in this session.
   */
  answer(sessionId: string, callId: string, reply: ApprovalReply): PendingApproval {
    const key = keyOf(sessionId, callId);
    const waiting = this.waiting.get(key);
    if (waiting === undefined) {
      const earlier = this.decided.get(key);
      if (earlier !== undefined) throw alreadyDecided(sessionId, callId, earlier);
      throw new HarnessError('APPROVAL_NOT_FOUND', `No tool call ${callId} is waiting for approval in session ${sessionId}; GET /v1/sessions/${sessionId}/approvals lists the ones that are.`, {
        details: { sessionId, callId },
      });
    }
    waiting.settle(reply.decision === 'allow' ? { decision: 'allow', decidedBy: DECIDED_BY_CLIENT } : { decision: 'deny', decidedBy: DECIDED_BY_CLIENT, reason: reply.reason ?? 'the user said no' });
    return waiting.pending;
  }

  /** Marks a call decided elsewhere (found in the journal), so answering it is a conflict. */
  isDecided(sessionId: string, callId: string): boolean {
    return this.decided.has(keyOf(sessionId, callId));
  }

  /** The calls waiting in one session, in the order they were asked. */
  pendingIn(sessionId: string): PendingApproval[] {
    return [...this.waiting.values()].filter((w) => w.pending.sessionId === sessionId).map((w) => w.pending);
  }

  private remember(key: string, decision: 'allow' | 'deny'): void {
    this.decided.set(key, decision);
    if (this.decided.size > ApprovalDesk.DECIDED_KEEP) this.decided.delete(this.decided.keys().next().value!);
  }
}

export function alreadyDecided(sessionId: string, callId: string, decision: 'allow' | 'deny'): HarnessError {
  return new HarnessError('APPROVAL_ALREADY_DECIDED', `Tool call ${callId} of session ${sessionId} was already decided (${decision}); a call is approved exactly once.`, {
    details: { sessionId, callId, decision },
  });
}

const keyOf = (sessionId: string, callId: string): string => `${sessionId}\0${callId}`;
