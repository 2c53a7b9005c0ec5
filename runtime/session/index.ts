/**
 * Sessions and the journal (DESIGN "Sessions and the journal"): events, the fold, the JSONL store
 * with crash repair, replay (read, fold, state at a seq, fork, list, recorded calls) and the
 * DeepSeek Harness import.
 */
export * from './events.ts';
export * from './types.ts';
export { assertLosslessJson, isLosslessJson } from './json.ts';
export { registerEventType, isKnownEventType, CORE_EVENT_TYPES, type EventReducer, type EventTypeOptions, type Surface } from './registry.ts';
export { initialState, reduceEvent, foldEvents, foldEventsAsync, stateAt, Folder } from './fold.ts';
export { resolveSessionPath, sessionsDir, journalPath, assertSessionId, isSessionId, dataDirOf } from './paths.ts';
export {
  JOURNAL_FORMAT_VERSION,
  readJournal,
  readJournalHeader,
  openSession,
  foldJournal,
  type ReadJournalOptions,
  type OpenedSession,
  type OpenSessionOptions,
  type SkippedLine,
} from './reader.ts';
export { serializeEvent, StoreJournal, type JournalIoOptions } from './journal.ts';
export { createJournal, openJournal, type CreateJournalOptions, type OpenJournalOptions, type OpenedJournal, type StoreOptions } from './open.ts';
export {
  registerJournalStore,
  redactStoreUrl,
  storeScheme,
  type JournalStore,
  type JournalLease,
  type JournalLine,
  type JournalPrefix,
  type JournalStoreFactory,
  type ReadRange,
  type TailOptions,
} from './store.ts';
export { FileJournalStore, type FileJournalStoreOptions } from './file-store.ts';
export { storeSource, fileSource, scanJournal, parseEventLine, parseHeaderLine, type LineSource, type ScanOptions, type ScanResult } from './reader.ts';
export { Summarizer, sortSummaries, RECORD_ENVELOPE, type SessionSummary } from './summary.ts';
export { exportSession, importJournal, type ImportJournalOptions } from './transfer.ts';
export { planRepair, needsRepair, unansweredToolCalls, type PlannedEvent, type RepairCause } from './repair.ts';
export { forkSession, listSessions, recordedCalls, type ForkOptions, type RecordedCall } from './replay.ts';
export {
  canonicalRequest,
  canonicalMessage,
  canonicalJson,
  canonicalHash,
  requestHash,
  firstDifference,
  showValue,
  showDifference,
  ABSENT,
  RequestRecorder,
  SnapshotReader,
  type CanonicalRequest,
  type CanonicalMessage,
  type RecordedRequest,
  type RecordedSnapshot,
  type RequestSnapshot,
  type SnapshotMessage,
  type Difference,
} from './snapshot.ts';
export { importDshSession, writeImportedSession, type DshImport, type AssemblerMismatch, type WriteImportedOptions } from './import-dsh.ts';
