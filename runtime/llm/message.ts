/**
 * Message constructors (seed 002 14.1). Every constructor mints an id with `crypto.randomUUID()`
 * unless given one, and deep-freezes the result.
 */
import { randomUUID } from 'node:crypto';
import { deepFreeze } from '../kernel/freeze.ts';
import type { AssistantMessage, CallId, ContentBlock, ContextForm, ImageBlock, Message, MessageSource, ReplayEnvelope, TextBlock, ToolResultMessage, UserMessage } from './types.ts';

type Content = string | readonly ContentBlock[];

function blocksOf(content: Content): readonly ContentBlock[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/** Any message; prefer the role constructors below. */
export function createMessage(message: { id?: string; role: Message['role']; content: Content; source: MessageSource }): Message {
  return deepFreeze({ id: message.id ?? randomUUID(), role: message.role, content: [...blocksOf(message.content)], source: { ...message.source } });
}

/** A user prompt (a string becomes one text block). */
export function createUserMessage(content: Content, options: { id?: string } = {}): UserMessage {
  return createMessage({ id: options.id, role: 'user', content, source: { kind: 'user' } }) as UserMessage;
}

/** Context injected by a plugin; `form` says what kind of context it is. */
export function createPluginMessage(plugin: string, content: Content, options: { id?: string; form?: ContextForm } = {}): UserMessage {
  const source = options.form === undefined ? { kind: 'plugin' as const, plugin } : { kind: 'plugin' as const, plugin, form: options.form };
  return createMessage({ id: options.id, role: 'user', content, source }) as UserMessage;
}

/** A model reply. `replayState` is the (pruned) envelope aligned with `content`. */
export function createAssistantMessage(message: { id?: string; content: Content; provider: string; model: string; replayState?: ReplayEnvelope }): AssistantMessage {
  const source =
    message.replayState === undefined
      ? { kind: 'model' as const, provider: message.provider, model: message.model }
      : { kind: 'model' as const, provider: message.provider, model: message.model, replayState: message.replayState };
  return createMessage({ id: message.id, role: 'assistant', content: message.content, source }) as AssistantMessage;
}

/** The result of one tool call (a string becomes one text block). */
export function createToolResultMessage(result: { id?: string; callId: CallId; content: string | readonly (TextBlock | ImageBlock)[]; isError?: boolean }): ToolResultMessage {
  const content = typeof result.content === 'string' ? [{ type: 'text' as const, text: result.content }] : [...result.content];
  return createMessage({
    id: result.id,
    role: 'user',
    content: [{ type: 'tool-result', toolCallId: result.callId, content, isError: result.isError ?? false }],
    source: { kind: 'tool', callId: result.callId },
  }) as ToolResultMessage;
}

/** True for a model's reply (`role: 'assistant'`). */
export function isAssistantMessage(message: Message): message is AssistantMessage {
  return message.role === 'assistant' && message.source.kind === 'model';
}

/** True for a tool's answer: source `tool`, exactly one `tool-result` block. */
export function isToolResultMessage(message: Message): message is ToolResultMessage {
  return message.source.kind === 'tool' && message.content.length === 1 && message.content[0]!.type === 'tool-result';
}

/** The concatenated text blocks of a message (no reasoning, no tool calls). */
export function messageText(message: Pick<Message, 'content'>): string {
  let text = '';
  for (const block of message.content) if (block.type === 'text') text += block.text;
  return text;
}
