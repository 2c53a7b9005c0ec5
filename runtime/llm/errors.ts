/**
 * LLM errors (seed 002 14.4): `LlmError extends HarnessError`, with the stable codes of
 * {@link LlmErrorCode} and a frozen JSON-safe `failure` that a finish chunk or a journal can carry.
 */
import { HarnessError, toFailure, type HarnessErrorOptions } from '../kernel/errors.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import type { LlmErrorCode, LlmFailure } from './types.ts';

/** A HarnessError from a model call, with an {@link LlmFailure} (codes: {@link LlmErrorCode}; seed 002 14.4). */
export class LlmError extends HarnessError {
  declare readonly failure: LlmFailure;
  constructor(code: LlmErrorCode | (string & {}), message: string, options: HarnessErrorOptions = {}) {
    super(code, message, options);
    this.name = 'LlmError';
  }
}

/** A frozen failure value, e.g. for a `finish{error}` chunk. Extra details must be JSON values. */
export function llmFailure(code: LlmErrorCode | (string & {}), message: string, details: Record<string, unknown> = {}): LlmFailure {
  return new LlmError(code, message, { details }).failure;
}

/**
 * The failure a thrown value stands for at the adapter boundary: a HarnessError keeps its code; an
 * abort (the signal fired, or an `AbortError`) is `ABORTED`; anything else is `UNKNOWN`.
 */
export function failureOf(error: unknown, signal?: AbortSignal): LlmFailure {
  if (HarnessError.is(error)) return error.failure as LlmFailure;
  if (signal?.aborted || (error instanceof Error && error.name === 'AbortError')) {
    return deepFreeze({ code: 'ABORTED', message: error instanceof Error ? error.message || 'The request was aborted.' : 'The request was aborted.' });
  }
  return toFailure(error, 'UNKNOWN') as LlmFailure;
}

/**
 * True for an exception that is a programming error, not a provider's or the network's failure:
 * `TypeError` (but not undici's `terminated` / `fetch failed`, which are transport), `RangeError`,
 * `ReferenceError`. These become `PLUGIN_ERROR` (see {@link pluginFailure}).
 */
export function isProgrammingError(error: unknown): error is Error {
  if (error instanceof TypeError) {
    const cause = (error as { cause?: { code?: unknown } }).cause;
    if (error.message === 'terminated' || error.message === 'fetch failed' || typeof cause?.code === 'string') return false;
    return true;
  }
  return error instanceof RangeError || error instanceof ReferenceError;
}

/**
 * The `PLUGIN_ERROR` failure of a plugin's bug (issue 14): names the plugin and what it was doing,
 * keeps the error's name and stack (`harness --debug` prints it). JSON-safe.
 */
export function pluginFailure(error: unknown, plugin: string | undefined, role: string): LlmFailure {
  const name = error instanceof Error ? error.name : typeof error;
  const message = error instanceof Error ? error.message : String(error);
  const who = plugin === undefined ? role : `Plugin "${plugin}" (${role})`;
  return llmFailure('PLUGIN_ERROR', `${who} failed with ${name}: ${message} — a bug in the plugin, not a provider failure; it is not retried.`, {
    ...(plugin === undefined ? {} : { plugin }),
    errorName: name,
    ...(error instanceof Error && typeof error.stack === 'string' ? { stack: error.stack } : {}),
  });
}
