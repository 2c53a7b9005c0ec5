/**
 * The crash test's workload, shared by the writer child and the checking parent: turns appended
 * the way the agent loop appends them (DESIGN "Durability": checkpoint before a model call, before
 * a tool body, at turn end). Deterministic, so the parent knows every event the child meant to write.
 */
// Imported module by module (not from runtime/index.ts) so that the writer child starts fast.
import { assembleChunks } from '../../runtime/llm/assembler.ts';
import { createAssistantMessage, createToolResultMessage, createUserMessage } from '../../runtime/llm/message.ts';
import type { StreamChunk } from '../../runtime/llm/types.ts';
import type { SessionEventMap, SessionEventType } from '../../runtime/session/events.ts';

export type Op = { readonly kind: 'append'; readonly type: SessionEventType; readonly data: SessionEventMap[SessionEventType] } | { readonly kind: 'checkpoint' } | { readonly kind: 'yield' };

const append = <T extends SessionEventType>(type: T, data: SessionEventMap[T]): Op => ({ kind: 'append', type, data: data as SessionEventMap[SessionEventType] });

/** One long turn: four steps with two tool calls each, then a final answer. */
export function* turnOps(turn: number): Generator<Op> {
  yield append('turn/start', { turn });
  yield append('user/message', { turn, message: createUserMessage(`Please do task ${turn}.`, { id: `user-${turn}` }) });
  for (let step = 1; step <= 5; step++) {
    const last = step === 5;
    yield append('step/start', { turn, step });
    if (turn === 1 && step === 1) yield append('request/header', { header: { config: { provider: 'crash', model: 'crash-1' }, tools: [] }, reason: 'initial' });
    yield { kind: 'checkpoint' }; // before the model call
    const chunks: StreamChunk[] = [];
    for (let i = 0; i < 40; i++) chunks.push({ type: 'reasoning-delta', index: 0, text: `thought ${turn}.${step}.${i} ` });
    for (let i = 0; i < 40; i++) chunks.push({ type: 'text-delta', index: 1, text: `word${i} `.repeat(1 + (i % 7)) });
    const calls = last ? [] : [`call-${turn}-${step}-a`, `call-${turn}-${step}-b`];
    calls.forEach((id, n) => {
      const args = JSON.stringify({ command: `echo ${id}`, padding: 'x'.repeat(200 + 50 * n) });
      for (let at = 0; at < args.length; at += 16) {
        chunks.push({ type: 'tool-call-delta', index: 2 + n, ...(at === 0 ? { id, name: 'exec' } : {}), arguments: args.slice(at, at + 16) });
      }
    });
    chunks.push({ type: 'usage', usage: { inputTokens: 100 * step, outputTokens: 40 } });
    chunks.push({ type: 'finish', finish: { kind: last ? 'stop' : 'tool-calls' } });
    for (let i = 0; i < chunks.length; i++) {
      yield append('assistant/chunk', { turn, step, chunk: chunks[i]! });
      if (i % 2 === 1) yield { kind: 'yield' }; // chunks arrive as from a stream (a few per read)
    }
    const assembled = assembleChunks(chunks);
    const message = createAssistantMessage({ id: `assistant-${turn}-${step}`, provider: 'crash', model: 'crash-1', content: assembled.content });
    yield append('assistant/message', { turn, step, message, finish: assembled.finish, ...(assembled.usage ? { usage: assembled.usage } : {}) });
    for (const block of assembled.content) {
      if (block.type !== 'tool-call') continue;
      yield append('tool/call', { turn, step, callId: block.id, name: block.name, arguments: block.arguments });
    }
    for (const id of calls) yield append('approval/decided', { turn, step, callId: id, decision: 'allow', decidedBy: 'crash-test' });
    for (const id of calls) {
      yield { kind: 'checkpoint' }; // before the tool body
      yield append('tool/start', { turn, step, callId: id });
      for (let i = 0; i < 3; i++) {
        yield append('tool/output', { turn, step, callId: id, text: `output ${i} of ${id}\n` });
        yield { kind: 'yield' };
      }
      yield append('tool/result', { turn, step, callId: id, message: createToolResultMessage({ id: `result-${id}`, callId: id, content: `done ${id}` }), durationMs: 3 });
    }
    yield append('step/end', { turn, step });
  }
  yield append('turn/end', { turn, reason: 'completed' });
  yield { kind: 'checkpoint' }; // at turn end
}

/** The events (type, data) of turns 1…n, in order. */
export function expectedEvents(turns: number): { type: SessionEventType; data: unknown }[] {
  const out: { type: SessionEventType; data: unknown }[] = [];
  for (let turn = 1; turn <= turns; turn++) for (const op of turnOps(turn)) if (op.kind === 'append') out.push({ type: op.type, data: op.data });
  return out;
}
