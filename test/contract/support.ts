/**
 * Streams built for the plugin-contract tests (issue 14): SSE bodies in each provider's wire format,
 * written here (not copied from the shared fixtures), served by the fixture server to the real SDKs.
 */
import { sseFrame } from '../support/fixture-server.ts';

/** An Anthropic Messages SSE body from a list of content blocks. */
export function anthropicBody(
  blocks: readonly (
    | { type: 'text'; deltas: readonly string[] }
    | { type: 'thinking'; deltas: readonly string[]; signature: string }
    | { type: 'tool_use'; id: string; name: string; deltas: readonly string[] }
  )[],
  options: { model?: string; stopReason?: string } = {},
): string {
  const frames: string[] = [];
  const event = (data: { type: string }) => frames.push(sseFrame(data, data.type));
  event({
    type: 'message_start',
    message: { id: 'msg_contract', type: 'message', role: 'assistant', model: options.model ?? 'claude-test', content: [], stop_reason: null, usage: { input_tokens: 21, output_tokens: 1 } },
  } as never);
  blocks.forEach((block, index) => {
    if (block.type === 'text') {
      event({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } } as never);
      for (const text of block.deltas) event({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } } as never);
    } else if (block.type === 'thinking') {
      event({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } } as never);
      for (const thinking of block.deltas) event({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking } } as never);
      event({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } } as never);
    } else {
      event({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } } as never);
      for (const partial_json of block.deltas) event({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } } as never);
    }
    event({ type: 'content_block_stop', index } as never);
  });
  event({ type: 'message_delta', delta: { stop_reason: options.stopReason ?? 'end_turn', stop_sequence: null }, usage: { output_tokens: 42 } } as never);
  event({ type: 'message_stop' });
  return frames.join('');
}
