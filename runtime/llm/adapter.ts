/**
 * The adapter seam (seed 002 14.3): one adapter = one provider protocol's streaming implementation.
 */
import type { RetryPolicyConfig } from './call-config.ts';
import type { AssistantMessage, GenerateOptions, LlmFailure, ModelInfo, ProviderInfo, ReplayEnvelope, StreamChunk } from './types.ts';

/** What the seam reports when it drops a message's replay state before a request. */
export interface ReplayDegradeReport {
  readonly provider: string;
  readonly model: string;
  readonly messageId: string;
  /**
   * Why the state was unusable: made on another route (`other-provider`) or for another model
   * (`other-model`), of another adapter's format (`other-kind`, `other-version`), no longer aligned
   * with the content (`misaligned`), or `malformed`.
   */
  readonly reason: 'other-provider' | 'other-model' | 'other-kind' | 'other-version' | 'misaligned' | 'malformed';
  /** Code `INVALID_REPLAY_STATE`. */
  readonly failure: LlmFailure;
}

/** Sampling defaults an adapter applies when a call does not set them. */
export interface AdapterDefaults {
  readonly temperature?: number;
  readonly maxTokens?: number;
  readonly reasoningEffort?: string;
}

/**
 * A provider adapter. Only `stream` is required. `stream` must honour `options.signal` at every await
 * and must end with one `finish` chunk; the seam turns anything it throws into a terminal
 * `finish{error|aborted}`, so an adapter may simply throw an `LlmError` with the right code. A stream
 * that ends without a finish becomes `finish{error, MALFORMED_RESPONSE}` (a truncated body). Unless
 * the iterator ends or throws by itself, the seam calls its `return()` — after the finish too — so
 * cleanup belongs in a `finally`.
 */
export abstract class LlmAdapter {
  abstract stream(options: GenerateOptions): AsyncIterable<StreamChunk>;

  /**
   * The replay-state format this adapter writes and reads (`response.kind` / `response.version` of its
   * envelopes). Without it, the adapter is given no replay state at all.
   */
  readonly replayFormat?: { readonly kind: string; readonly version: number };

  /** Describes a route served by this adapter. */
  providerInfo?(provider: string): ProviderInfo;
  /** The provider's retry policy (merged over the defaults). */
  providerRetryPolicy?(provider: string): RetryPolicyConfig | undefined;
  /** The model catalog of a route. */
  listModels?(provider: string): readonly ModelInfo[] | Promise<readonly ModelInfo[]>;
  /** Exact lookup of one model; `undefined` means unknown (`UNKNOWN_MODEL`). */
  resolveModel?(provider: string, model: string): ModelInfo | undefined | Promise<ModelInfo | undefined>;
  /** Defaults applied to calls on a route. */
  defaults?(provider: string): AdapterDefaults | undefined;
  /**
   * Checks, without a request, that a route can be called at all — e.g. that its API key is set.
   * `prepareCall` runs it, so a missing key fails before anything is sent or journaled.
   * @throws LlmError (`AUTH` for missing credentials) naming what to fix.
   */
  preflight?(provider: string, model: ModelInfo): void | Promise<void>;
  /**
   * Adapter-specific check of an envelope of its own kind and version, before a request: return a
   * reason to degrade the message (malformed state), or undefined to use it.
   */
  validateReplayState?(envelope: ReplayEnvelope, message: AssistantMessage): string | undefined;
  /** Told when a message's replay state was dropped before a request to this adapter. */
  onReplayDegrade?(report: ReplayDegradeReport): void;
}
