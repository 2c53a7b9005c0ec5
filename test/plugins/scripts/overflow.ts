/**
 * Scripted-model script for the compaction tests: a model whose context "overflows" until the
 * history has been compacted. Decided from the request alone (no counters), so it is deterministic:
 *
 * - `purpose: 'compaction'` → a summary naming every prompt it was given (a system prompt containing
 *   `[summary:empty]` makes it empty, `[summary:tool]` makes it a tool call instead);
 * - a prompt containing `overflow`, while no compaction summary is in the history →
 *   `CONTEXT_WINDOW_EXCEEDED`;
 * - step 1 of a prompt `call <tool>` → a call of `<tool>` with `{}`;
 * - step 1 of any other prompt → a `fetch` call whose id and key come from the prompt;
 * - otherwise → `done: <prompt>`.
 */
import type { ScriptContext, ScriptReply } from '../../../plugins/llm-scripted/index.ts';

export default function overflow(context: ScriptContext): ScriptReply {
  const prompts = context.messages.filter((m) => m.role === 'user' && m.source.kind === 'user').map((m) => m.content.map((b) => (b.type === 'text' ? b.text : '')).join(''));
  if (context.purpose === 'compaction') {
    if (context.system?.includes('[summary:empty]')) return { text: '' };
    if (context.system?.includes('[summary:tool]')) return { text: 'Let me look first.', toolCalls: [{ name: 'fetch', id: 'call-summary', arguments: { key: 'summary' } }] };
    return { text: `Summary of: ${prompts.slice(0, -1).join(' | ')}` };
  }
  const compacted = context.messages.some((m) => m.source.kind === 'plugin' && m.source.plugin === 'compaction');
  if (context.prompt.includes('overflow') && !compacted) return { error: { code: 'CONTEXT_WINDOW_EXCEEDED', message: "This request is longer than the model's context window." } };
  const named = /^call (\w+)/.exec(context.prompt);
  if (named && context.step === 1) return { toolCalls: [{ name: named[1]!, id: `call-${named[1]}`, arguments: {} }] };
  const key = context.prompt.replace(/[^a-z0-9]+/gi, '-');
  if (context.step === 1) return { toolCalls: [{ name: 'fetch', id: `call-${key}`, arguments: { key } }] };
  return { text: `done: ${context.prompt}` };
}
