/**
 * Message constructors (seed 002 14.1) and LLM errors (seed 002 14.4, seed 003 error view).
 */
import { describe, expect, it } from 'vitest';
import {
  HarnessError,
  LlmError,
  createAssistantMessage,
  createMessage,
  createPluginMessage,
  createToolResultMessage,
  createUserMessage,
  getErrorInfo,
  isAssistantMessage,
  isToolResultMessage,
  llmFailure,
  messageText,
} from '../../runtime/index.ts';
import { failureOf } from '../../runtime/internal.ts';

function isDeepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  if (!Object.isFrozen(value)) return false;
  return Object.values(value).every(isDeepFrozen);
}

describe('message constructors', () => {
  it('build the exact shapes and deep-freeze them', () => {
    const user = createUserMessage('hi', { id: 'u' });
    expect(user).toEqual({ id: 'u', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } });
    const plugin = createPluginMessage('memory', [{ type: 'text', text: 'ctx' }], { id: 'p', form: 'recall' });
    expect(plugin).toEqual({ id: 'p', role: 'user', content: [{ type: 'text', text: 'ctx' }], source: { kind: 'plugin', plugin: 'memory', form: 'recall' } });
    expect(createPluginMessage('memory', 'x').source).toEqual({ kind: 'plugin', plugin: 'memory' });
    const replayState = { response: { kind: 'k', version: 1, nested: { deep: [1, { x: 2 }] } }, blocks: [{ sig: 's' }, { sig: 't' }] };
    const assistant = createAssistantMessage({
      id: 'a',
      provider: 'p',
      model: 'm',
      content: [
        { type: 'reasoning', text: 'r' },
        { type: 'tool-call', id: 'c', name: 'n', arguments: '{"a":1}' },
      ],
      replayState,
    });
    expect(assistant.source).toEqual({ kind: 'model', provider: 'p', model: 'm', replayState });
    expect('replayState' in createAssistantMessage({ provider: 'p', model: 'm', content: 'x' }).source).toBe(false);
    const result = createToolResultMessage({ id: 't', callId: 'c', content: [{ type: 'text', text: 'out' }], isError: true });
    expect(result).toEqual({
      id: 't',
      role: 'user',
      content: [{ type: 'tool-result', toolCallId: 'c', content: [{ type: 'text', text: 'out' }], isError: true }],
      source: { kind: 'tool', callId: 'c' },
    });
    expect(createToolResultMessage({ callId: 'c', content: 'ok' }).content[0]).toEqual({ type: 'tool-result', toolCallId: 'c', content: [{ type: 'text', text: 'ok' }], isError: false });
    const system = createMessage({ role: 'system', content: 'rules', source: { kind: 'user' } });
    for (const message of [user, plugin, assistant, result, system]) expect(isDeepFrozen(message)).toBe(true);
    expect(Object.isFrozen(replayState.response.nested.deep[1])).toBe(true);
    expect(() => {
      (assistant.content as unknown[]).push({ type: 'text', text: 'x' });
    }).toThrow(TypeError);
  });

  it('the caller keeps its own arrays: the content array is copied', () => {
    const content = [{ type: 'text' as const, text: 'a' }];
    const message = createUserMessage(content);
    expect(message.content).not.toBe(content);
    expect(Object.isFrozen(content)).toBe(false);
    content.push({ type: 'text', text: 'b' });
    expect(message.content).toHaveLength(1);
  });

  it('ids are unique UUIDs unless given', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 2000; i++) ids.add(createUserMessage('x').id);
    ids.add(createAssistantMessage({ provider: 'p', model: 'm', content: 'x' }).id);
    ids.add(createToolResultMessage({ callId: 'c', content: 'x' }).id);
    ids.add(createPluginMessage('p', 'x').id);
    expect(ids.size).toBe(2003);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('guards and messageText', () => {
    const assistant = createAssistantMessage({
      provider: 'p',
      model: 'm',
      content: [
        { type: 'reasoning', text: 'no' },
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ],
    });
    expect(isAssistantMessage(assistant)).toBe(true);
    expect(isAssistantMessage(createUserMessage('x'))).toBe(false);
    expect(isToolResultMessage(createToolResultMessage({ callId: 'c', content: 'x' }))).toBe(true);
    expect(isToolResultMessage(createUserMessage('x'))).toBe(false);
    expect(messageText(assistant)).toBe('ab');
  });
});

describe('LLM errors', () => {
  it('LlmError is a HarnessError with a stable code and a frozen, JSON-safe failure keeping status and providerRetryAfterMs', () => {
    const cause = new Error('socket');
    const error = new LlmError('RATE_LIMIT', 'Too many requests', {
      cause,
      details: { status: 429, providerRetryAfterMs: 7000, providerCode: 'rate_limit_exceeded', headers: { a: 'b' }, bad: Number.NaN, fn: () => 1, skip: undefined, err: new TypeError('x') },
    });
    expect(error).toBeInstanceOf(HarnessError);
    expect(error).toBeInstanceOf(Error);
    expect(HarnessError.is(error)).toBe(true);
    expect(error.name).toBe('LlmError');
    expect(error.code).toBe('RATE_LIMIT');
    expect(error.cause).toBe(cause);
    expect(error.failure).toEqual({
      code: 'RATE_LIMIT',
      message: 'Too many requests',
      status: 429,
      providerRetryAfterMs: 7000,
      providerCode: 'rate_limit_exceeded',
      headers: { a: 'b' },
      bad: null,
      err: { name: 'TypeError', message: 'x' },
    });
    expect(isDeepFrozen(error.failure)).toBe(true);
    expect(JSON.parse(JSON.stringify(error.failure))).toEqual(error.failure);
    // details cannot override the code or the message
    expect(new LlmError('AUTH', 'real', { details: { code: 'FAKE', message: 'fake' } }).failure).toEqual({ code: 'AUTH', message: 'real' });
  });

  it('llmFailure and failureOf', () => {
    expect(llmFailure('SERVER', 'down', { status: 503 })).toEqual({ code: 'SERVER', message: 'down', status: 503 });
    const rate = new LlmError('RATE_LIMIT', 'slow');
    expect(failureOf(rate)).toBe(rate.failure);
    expect(failureOf(new Error('x'))).toEqual({ code: 'UNKNOWN', message: 'x' });
    expect(failureOf('str')).toEqual({ code: 'UNKNOWN', message: 'str' });
    const abortError = new DOMException('This operation was aborted', 'AbortError');
    expect(failureOf(abortError)).toEqual({ code: 'ABORTED', message: 'This operation was aborted' });
    const controller = new AbortController();
    controller.abort();
    expect(failureOf(new Error('terminated'), controller.signal)).toEqual({ code: 'ABORTED', message: 'terminated' });
    expect(failureOf(undefined, controller.signal)).toEqual({ code: 'ABORTED', message: 'The request was aborted.' });
  });

  it('getErrorInfo gives the seed 003 view of any thrown value', () => {
    const inner = new LlmError('TRANSPORT', 'socket', { isRetryable: true });
    const outer = new LlmError('SERVER', 'failed', { cause: inner, issues: [{ code: 'BAD', message: 'bad field', path: ['a', 0] }] });
    expect(getErrorInfo(outer)).toEqual({ code: 'SERVER', codes: ['SERVER', 'TRANSPORT'], issues: [{ code: 'BAD', message: 'bad field', path: ['a', 0] }], isRetryable: true, cause: outer });
    expect(getErrorInfo('nope')).toEqual({ code: 'UNKNOWN', codes: ['UNKNOWN'], issues: [], cause: 'nope' });
    const plain = new Error('x');
    expect(getErrorInfo(plain)).toEqual({ code: 'UNKNOWN', codes: ['UNKNOWN'], issues: [], cause: plain });
    const withCode = Object.assign(new Error('conn'), { code: 'ECONNRESET' });
    expect(getErrorInfo(withCode).code).toBe('ECONNRESET');
  });
});
