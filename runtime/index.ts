/**
 * The public API of Harness (`harness-runtime`): everything a plugin author or an embedder imports,
 * by name. Each name's docstring is on its declaration. What the CLI, the tests and the benchmarks
 * need beyond this lives in `./internal.ts`, which is not part of the package's `exports` map.
 *
 * Plugin authors: `definePlugin`, `defineTool`, the hook types (declaration merging on `HookMap`),
 * the message and stream vocabulary, the adapter kit (`LlmAdapter`, `RoutedSdkAdapter`, `StreamPump`,
 * route config helpers), errors. Embedders: `defineConfig`, `createHarness`, `session.prompt()` /
 * `session.run()`, and the journal readers (read, fold, state at a seq, fork, list, import).
 */

// ── Plugins and hooks (DESIGN "The kernel") ──────────────────────────────────────────────────
export type {
  WaterfallHook,
  EmitHook,
  SinkHook,
  HookMode,
  Diagnostic,
  HookMap,
  HookName,
  WaterfallName,
  EmitName,
  SinkName,
  PayloadOf,
  ResultOf,
  EventOf,
  Next,
  WaterfallListener,
  EventListener,
  ListenerOf,
  ListenOptions,
  Disposer,
} from './kernel/bus.ts';
export type { PluginContext, HarnessServices } from './kernel/context.ts';
export { definePlugin, type PluginDefinition, type PluginSpec, type PluginInfo, type PluginReloadedEvent, type PluginReloadFailedEvent } from './kernel/plugin.ts';
export { zodSchema, type SchemaAdapter, type JsonSchema } from './kernel/schema.ts';
export { closestName } from './kernel/config-check.ts';
export type { DeepReadonly } from './kernel/freeze.ts';
export { z } from 'zod';

// ── Errors (seed 003 "错误与观察") ──────────────────────────────────────────────────────────────
export { HarnessError, getErrorInfo, type HarnessErrorOptions, type Failure, type Issue, type ErrorInfo } from './kernel/errors.ts';
export { SecretRedactor, SecretStream, secrets, sdkLogger, SECRET_ENV_NAME, type SdkLogger } from './kernel/secrets.ts';
export { LlmError, llmFailure } from './llm/errors.ts';

// ── The model vocabulary and ctx.llm (seed 002) ──────────────────────────────────────────────
export type {
  MessageId,
  CallId,
  TextBlock,
  ReasoningBlock,
  ImageBlock,
  FileBlock,
  ToolCallBlock,
  ToolResultBlock,
  ContentBlockMap,
  ContentBlock,
  ContentBlockType,
  ContextForm,
  ReplayEnvelope,
  MessageSourceMap,
  MessageSource,
  ModelSource,
  Message,
  UserMessage,
  AssistantMessage,
  ToolResultMessage,
  TokenUsage,
  LlmErrorCode,
  LlmFailure,
  FinishReasonMap,
  FinishReason,
  StreamChunkMap,
  StreamChunk,
  ToolSpec,
  CallPurpose,
  LlmCallConfig,
  GenerateOptions,
  ModelInfo,
  ProviderInfo,
} from './llm/types.ts';
export {
  createMessage,
  createUserMessage,
  createPluginMessage,
  createAssistantMessage,
  createToolResultMessage,
  isAssistantMessage,
  isToolResultMessage,
  messageText,
} from './llm/message.ts';
export { prefixSum, sharedPrefixLength } from './llm/prefix.ts';
export { BlockAssembler, assembleChunks, type AssembledMessage } from './llm/assembler.ts';
export { rewriteText, type TextRewrite } from './llm/rewrite-text.ts';
export { contentDigest } from './llm/digest.ts';
export { LlmAdapter, type AdapterDefaults, type ReplayDegradeReport } from './llm/adapter.ts';
export type { AdapterRegistrationHandle, RouteInfo, AdaptersUpdatedEvent } from './llm/registry.ts';
export type { LlmContext, PreparedCall, PrepareOptions, ModelStandIn } from './llm/service.ts';
export { OBSERVE_REQUEST } from './llm/types.ts';
export { resolveRetryPolicy, isRetryableCode, DEFAULT_RETRY_POLICY, type RetryPolicyConfig, type ResolvedRetryPolicy } from './llm/call-config.ts';

// ── Writing a provider adapter on an official SDK ────────────────────────────────────────────
export {
  RoutedSdkAdapter,
  StreamPump,
  ClientCache,
  mapSdkFailure,
  retryAfterMsOf,
  isNetworkFailure,
  type CatalogRoute,
  type KeyedRoute,
  type StreamParser,
  type StreamPumpOptions,
  type SdkErrorClasses,
  type SdkErrorMapper,
} from './llm/adapter-kit.ts';
export {
  modelEntrySchema,
  routeFields,
  checkCatalog,
  resolveRouteFields,
  overlayRoute,
  httpHeadersSchema,
  DEFAULT_IDLE_TIMEOUT_MS,
  type RouteFieldsOptions,
  type RouteFieldsConfig,
  type ResolvedRouteFields,
} from './llm/route-config.ts';

// ── Tools and the agent loop (seed 000) ──────────────────────────────────────────────────────
export { defineTool, type ToolDefinition, type ToolContext, type ToolOutput, type StreamedToolOutput, type ToolExecute, type ToolsContext, type ReadonlyCatalog } from './agent/tools.ts';
export type {
  SessionHandle,
  RequestProposal,
  PreStepPayload,
  RequestErrorPayload,
  RequestErrorDecision,
  ToolExecutePayload,
  ApprovalRequest,
  ApprovalDecision,
  ApprovalAnswer,
  ApproveFn,
  RunOptions,
} from './agent/hooks.ts';
export type { AgentSession, RunInput, TurnResult } from './agent/session.ts';

// ── Embedding: config, the harness, sessions ─────────────────────────────────────────────────
export {
  defineConfig,
  createHarness,
  CONFIG_FILE_NAMES,
  type HarnessConfig,
  type Harness,
  type HarnessPaths,
  type SessionOptions,
  type CreateSessionOptions,
  type SessionsService,
  type CreateHarnessOptions,
} from './harness.ts';
export { reloadConfig, applyConfig, appliedConfig, pluginsNotRunning, type ConfigReloadResult, type PluginChange, type PluginNotRunning } from './config-reload.ts';
export type { ConfigReloadFailedEvent } from './reload-journal.ts';

// ── The journal: events, state, reading, replay, import (DESIGN "Sessions and the journal") ──
export type {
  TurnEndReason,
  RequestHeader,
  ApprovalDecider,
  SessionEventMap,
  SessionEventType,
  SessionEvent,
  AnySessionEvent,
  SessionHeader,
  SessionEventDelivery,
  SessionWrittenBatch,
  ParentSessionLink,
  ForwardedEvent,
  PluginReloadRecord,
} from './session/events.ts';
export type { SessionState, PendingToolCall, SessionJournal, AppendOptions, RepairReport, ModelUsage } from './session/types.ts';
export { registerEventType, type EventReducer, type EventTypeOptions, type Surface } from './session/registry.ts';
export { foldEvents, stateAt } from './session/fold.ts';
export { checkTraceContext, type TraceContext, type TraceContextCheck } from './session/trace-context.ts';
export { readJournal, readJournalHeader, openSession, type ReadJournalOptions, type OpenedSession, type OpenSessionOptions, type SeqGap, type SkippedLine } from './session/reader.ts';
export {
  childSessionIndex,
  forkSession,
  listSessions,
  listChildSessions,
  recordedCalls,
  type ChildSessionIndex,
  type ForkOptions,
  type ForkedJournal,
  type RecordedCall,
} from './session/replay.ts';
export type { SessionSummary } from './session/summary.ts';

// ── Journal stores (DESIGN "Stores"): the seam a store plugin implements, the file store, moving sessions ──
export {
  registerJournalStore,
  redactStoreUrl,
  storeScheme,
  isFileStoreSpec,
  type JournalStore,
  type JournalLease,
  type JournalLine,
  type JournalPrefix,
  type JournalStoreFactory,
  type ReadRange,
  type TailOptions,
} from './session/store.ts';
export { FileJournalStore, type FileJournalStoreOptions } from './session/file-store.ts';
export { Summarizer, sortSummaries, RECORD_ENVELOPE } from './session/summary.ts';
export { storeSource, type LineSource } from './session/reader.ts';
export { exportSession, importJournal, type ImportJournalOptions } from './session/transfer.ts';

export {
  canonicalRequest,
  canonicalMessage,
  canonicalJson,
  canonicalHash,
  requestHash,
  RequestHasher,
  firstDifference,
  showValue,
  showDifference,
  ABSENT,
  SnapshotReader,
  type CanonicalRequest,
  type CanonicalMessage,
  type RecordedRequest,
  type RecordedSnapshot,
  type RequestSnapshot,
  type SnapshotMessage,
  type Difference,
} from './session/snapshot.ts';
export {
  importDshSession,
  writeImportedSession,
  dshChildCallId,
  dshChildFiles,
  type DshImport,
  type AssemblerMismatch,
  type WriteImportedOptions,
  type ImportedSession,
} from './session/import-dsh.ts';
