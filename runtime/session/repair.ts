/**
 * Closing what a crash left open (DESIGN "Durability": an interrupted turn is closed with synthetic
 * events). Given the fold of a journal and the model call it ended in, `planRepair` lists the
 * events that make the history valid again, in the order they are appended:
 *
 * 1. an open compaction → `compaction/end{outcome:'failed', failure.code:'INTERRUPTED'}`;
 * 2. a step that was mid-stream (chunks but no `assistant/message`) → the interrupted assistant
 *    message: the non-empty text and reasoning the chunks carried, no tool calls (their arguments
 *    may be cut, and they were never journaled as `tool/call`, never approved, never run),
 *    `interrupted: true`, `finish{aborted, INTERRUPTED}`. Nothing is appended when nothing
 *    survives, or when the call had already failed (`finish{error|aborted}`: a failed call's
 *    content never enters the history — the loop would have retried it);
 * 3. every tool call in the surface without a result, in surface order: a call journaled with
 *    `tool/call` but not started → `tool/result{code:'TOOL_NOT_STARTED'}`; started (`tool/start`)
 *    but no result → `tool/result{code:'TOOL_OUTCOME_UNKNOWN'}`; a tool-call block of an
 *    assistant message whose `tool/call` was never journaled → `tool/call` then
 *    `tool/result{TOOL_NOT_STARTED}` — every tool call of an assistant message must be answered,
 *    or the next request is invalid for every provider; pending calls not in the surface get a
 *    result too;
 * 4. `step/end` if a step is open, then `turn/end{reason:'interrupted'}` if a turn is open.
 */
import { randomUUID } from 'node:crypto';
import { createAssistantMessage, createToolResultMessage } from '../llm/message.ts';
import type { LlmFailure } from '../llm/types.ts';
import type { SessionEventMap, SessionEventType } from './events.ts';
import type { LiveCall } from './reader.ts';
import type { PendingToolCall, SessionState } from './types.ts';

export interface PlannedEvent<T extends SessionEventType = SessionEventType> {
  readonly type: T;
  readonly data: SessionEventMap[T];
}

/**
 * Why what was open is being closed: a journal reopened after a crash (the default), or a fork cut
 * at a seq inside a turn (`{ kind: 'fork', atSeq }`).
 */
export type RepairCause = { readonly kind: 'reopen' } | { readonly kind: 'fork'; readonly atSeq: number };

const REOPEN: RepairCause = { kind: 'reopen' };

function interrupted(what: string, cause: RepairCause): LlmFailure {
  return {
    code: 'INTERRUPTED',
    message:
      cause.kind === 'fork'
        ? `The fork at seq ${cause.atSeq} cut the session while ${what}; the fork closed it.`
        : `The session ended (crash or kill) while ${what}; closed when the journal was reopened.`,
  };
}

/** True when the state has something a crash left open. */
export function needsRepair(state: SessionState, liveCall?: LiveCall): boolean {
  return plan(state, liveCall, REOPEN).length > 0;
}

/** The synthetic events that close what `state` left open (see the module comment). */
export function planRepair(state: SessionState, liveCall?: LiveCall, cause: RepairCause = REOPEN): PlannedEvent[] {
  return plan(state, liveCall, cause);
}

function plan(state: SessionState, liveCall: LiveCall | undefined, cause: RepairCause): PlannedEvent[] {
  const out: PlannedEvent[] = [];
  const push = <T extends SessionEventType>(type: T, data: SessionEventMap[T]): void => void out.push({ type, data } as PlannedEvent);
  const open = state.openTurn;

  if (state.compacting) push('compaction/end', { outcome: 'failed', failure: interrupted('a compaction was running', cause) });

  if (open?.stepOpen && liveCall !== undefined && liveCall.chunkCount > 0 && liveCall.turn === open.turn && liveCall.step === open.step) {
    const finish = liveCall.finish;
    if (finish === undefined || finish.kind === 'stop' || finish.kind === 'tool-calls' || finish.kind === 'max-tokens') {
      const kept = liveCall.assembler.interruptedBlocks();
      if (kept.length > 0) {
        const config = state.header?.config;
        const message = createAssistantMessage({ id: randomUUID(), content: kept, provider: config?.provider ?? 'unknown', model: config?.model ?? 'unknown' });
        push('assistant/message', {
          turn: liveCall.turn,
          step: liveCall.step,
          message,
          finish: { kind: 'aborted', failure: interrupted('this reply was streaming', cause) },
          interrupted: true,
        });
      }
    }
  }

  const turn = open?.turn ?? state.lastTurnEnd?.turn ?? 0;
  const step = open?.step ?? 0;
  const pending = new Map<string, PendingToolCall>();
  for (const call of state.pendingToolCalls) pending.set(call.callId, call);
  for (const call of unansweredToolCalls(state)) {
    const journaled = pending.get(call.id);
    if (journaled === undefined) {
      push('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.arguments });
      push('tool/result', toolResult({ callId: call.id, turn, step, started: false }, cause));
    } else {
      pending.delete(call.id);
      push('tool/result', toolResult(journaled, cause));
    }
  }
  for (const call of pending.values()) push('tool/result', toolResult(call, cause));

  if (open?.stepOpen && open.step !== undefined) push('step/end', { turn: open.turn, step: open.step });
  if (open !== undefined) push('turn/end', { turn: open.turn, reason: 'interrupted', failure: interrupted(`turn ${open.turn} was running`, cause) });
  return out;
}

function toolResult(call: { callId: string; turn: number; step: number; started: boolean }, cause: RepairCause): SessionEventMap['tool/result'] {
  const code = call.started ? 'TOOL_OUTCOME_UNKNOWN' : 'TOOL_NOT_STARTED';
  const ended = cause.kind === 'fork' ? `The fork at seq ${cause.atSeq} cut the session` : 'The session ended';
  const text = call.started
    ? `${ended} while this tool call was running: its outcome is unknown. It may have had effects; check before running it again.`
    : `${ended} before this tool call started: it did not run.`;
  const message = createToolResultMessage({ id: randomUUID(), callId: call.callId, content: text, isError: true });
  return { turn: call.turn, step: call.step, callId: call.callId, message, code };
}

/**
 * Tool calls of the surface's assistant messages that no later tool result answers, in surface
 * order (ids may repeat across turns, so the walk is order-aware).
 */
export function unansweredToolCalls(state: Pick<SessionState, 'messages'>): { id: string; name: string; arguments: string }[] {
  const open = new Map<string, { id: string; name: string; arguments: string }>();
  for (const message of state.messages) {
    for (const block of message.content) {
      if (block.type === 'tool-call' && message.role === 'assistant') {
        open.delete(block.id);
        open.set(block.id, { id: block.id, name: block.name, arguments: block.arguments });
      } else if (block.type === 'tool-result') open.delete(block.toolCallId);
    }
  }
  return [...open.values()];
}
