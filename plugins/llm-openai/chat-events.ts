/**
 * The Chat Completions event stream as this adapter reads it: the SDK's own SSE decoder
 * (`_iterSSEMessages`) under a `Stream` subclass handed to the SDK as `__streamClass`, so the request,
 * its HTTP errors and its retries stay the SDK's. It differs from the SDK's `Stream` in two ways
 * the parser needs:
 * - `data: [DONE]` is passed on as {@link CHAT_DONE} (the SDK swallows it): a stream that ended with
 *   `[DONE]` finished, one that merely stopped did not;
 * - a chunk carrying `error` (a mid-stream error object, or Groq's `event: error`) is passed on whole
 *   instead of thrown, so its `usage` is not lost; the stream ends after it, as the SDK's does.
 * Frames after `[DONE]` are ignored; a frame that is not JSON throws `SyntaxError` (→ `MALFORMED_RESPONSE`).
 */
import type OpenAI from 'openai';
import { _iterSSEMessages, Stream } from 'openai/core/streaming';

/** The marker yielded for `data: [DONE]`. */
export const CHAT_DONE: unique symbol = Symbol('openai-chat [DONE]');

/** A `Stream` whose items are the parsed chunks, {@link CHAT_DONE} and error chunks (see the module docstring). */
export class ChatEventStream<Item> extends Stream<Item> {
  static override fromSSEResponse<Item>(response: Response, controller: AbortController, client?: OpenAI): Stream<Item> {
    let consumed = false;
    async function* iterator(): AsyncGenerator<Item> {
      if (consumed) throw new Error('A Chat Completions event stream can be iterated once.');
      consumed = true;
      let done = false;
      try {
        for await (const sse of _iterSSEMessages(response, controller)) {
          if (sse.data.startsWith('[DONE]')) {
            done = true;
            yield CHAT_DONE as Item;
            break;
          }
          const data = JSON.parse(sse.data) as { error?: unknown } | null;
          yield data as Item;
          if (data !== null && typeof data === 'object' && data.error) {
            done = true;
            break;
          }
        }
        done = true;
      } catch (error) {
        // The caller aborted: end quietly, like the SDK's Stream (the pump reports the abort).
        if (controller.signal.aborted) return;
        throw error;
      } finally {
        if (!done) controller.abort();
      }
    }
    return new ChatEventStream<Item>(iterator, controller, client);
  }
}
