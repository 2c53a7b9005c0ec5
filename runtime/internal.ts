/**
 * Internals for Harness's own CLI, tests and benchmarks: the kernel's classes, the journal file
 * store, paths, repair and the loop's close-out. Not in the package's `exports` map and not a
 * contract: a plugin must not import this (`.ci/run` checks it) — what a plugin needs is in
 * `./index.ts`. Import the public names from `./index.ts`; this module adds only what it lacks.
 */

// ── Kernel ───────────────────────────────────────────────────────────────────────────────────
export { HookBus } from './kernel/bus.ts';
export { Kernel, type ContextExtension } from './kernel/context.ts';
export { toFailure, toJsonSafe } from './kernel/errors.ts';
export { Fiber, Scope, type Registration } from './kernel/fiber.ts';
export { deepFreeze, isPlainData } from './kernel/freeze.ts';
export { columnOfByteOffset } from './kernel/key-location.ts';
export { importGeneration } from './kernel/module-loader.ts';
export { PluginHost, isPluginDefinition, parseConfig } from './kernel/plugin.ts';
export { isSchemaAdapter, formatIssues } from './kernel/schema.ts';

// ── LLM service ──────────────────────────────────────────────────────────────────────────────
export { failureOf } from './llm/errors.ts';
export { CallControl, idleTimeoutError, abortedError } from './llm/adapter-kit.ts';
export { AdapterRegistry, AdapterRegistration } from './llm/registry.ts';
export { LlmService } from './llm/service.ts';
export { callConfigEquals, pickCallConfig, markAgentLoopRequest, isAgentLoopRequest } from './llm/call-config.ts';

// ── Agent loop ───────────────────────────────────────────────────────────────────────────────
export { AgentSession, newSessionId, type AgentSessionOptions } from './agent/session.ts';
export { ToolRegistry, DEFAULT_TOOL_TIMEOUT_MS, DEFAULT_MAX_OUTPUT_CHARS } from './agent/tools.ts';
export { parseToolCall, runTool, errorOutcome, truncateHead, type ToolOutcome, type ParsedCall, type RunToolOptions } from './agent/closeout.ts';

// ── Config ───────────────────────────────────────────────────────────────────────────────────
export { loadConfig, resolveDataDir } from './harness.ts';

// ── Journal store, paths, repair ─────────────────────────────────────────────────────────────
export { assertLosslessJson, isLosslessJson } from './session/json.ts';
export { isKnownEventType, CORE_EVENT_TYPES } from './session/registry.ts';
export { initialState, reduceEvent, foldEventsAsync, Folder } from './session/fold.ts';
export { resolveSessionPath, sessionsDir, journalPath, assertSessionId, isSessionId, dataDirOf, lockPathOf } from './session/paths.ts';
export { liveWriterPid } from './session/lock.ts';
export { ensureDirectory } from './session/fs.ts';
export { JOURNAL_FORMAT_VERSION, foldJournal, scanJournal, fileSource, parseEventLine, parseHeaderLine, type ScanOptions, type ScanResult } from './session/reader.ts';
export { serializeEvent, StoreJournal, type JournalIoOptions } from './session/journal.ts';
export { registeredStoreSchemes } from './session/store.ts';
export { createJournal, openJournal, type CreateJournalOptions, type OpenJournalOptions, type OpenedJournal, type StoreOptions } from './session/open.ts';
export { planRepair, needsRepair, unansweredToolCalls, type PlannedEvent, type RepairCause } from './session/repair.ts';
export { RequestRecorder } from './session/snapshot.ts';
