/**
 * A script for the scripted model (plugins/llm-scripted): call `word_count` on README.md, then
 * answer with what it said. Served as model `count-words` (see adding-a-tool.ts).
 */
import type { ScriptContext, ScriptReply } from '../../plugins/llm-scripted/index.ts';

export default function countWords(context: ScriptContext): ScriptReply {
  const result = context.toolResults.find((r) => r.name === 'word_count');
  if (result === undefined) return { text: 'Let me count.', toolCalls: [{ name: 'word_count', arguments: { path: 'README.md' } }] };
  return { text: result.isError ? `The tool failed: ${result.text}` : `README.md has ${result.text}.` };
}
