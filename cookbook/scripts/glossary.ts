/**
 * A script for the scripted model: look "journal" up with the glossary server's tool, add a term,
 * then answer with what the tools said. Served as model `glossary` (see mcp.ts).
 */
import type { ScriptContext, ScriptReply } from '../../plugins/llm-scripted/index.ts';

export default function glossary(context: ScriptContext): ScriptReply {
  if (context.step === 1) {
    return {
      toolCalls: [
        { name: 'glossary__define', arguments: { term: 'journal' } },
        { name: 'glossary__add_term', arguments: { term: 'fiber', definition: 'the owner of a plugin’s registrations, undone together' } },
      ],
    };
  }
  return { text: context.toolResults.map((r) => (r.isError ? `(${r.name} failed: ${r.text})` : r.text)).join('\n') };
}
