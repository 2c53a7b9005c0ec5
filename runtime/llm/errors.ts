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
