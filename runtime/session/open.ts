/**
 * Creating and opening session journals on a store (DESIGN "Durability"): `createJournal` starts
 * a session, `openJournal` takes its writer lease and repairs what a crash left — the same way on
 * every store, since both work on the store's lines.
 */
import { randomUUID } from 'node:crypto';
import { basename } from 'node:path';
import type { HookBus } from '../kernel/bus.ts';
import { deepFreeze } from '../kernel/freeze.ts';
import type { AnySessionEvent, SessionHeader } from './events.ts';
import { FileJournalStore } from './file-store.ts';
import { initialState } from './fold.ts';
import { StoreJournal, ReadOnlyJournal, type JournalIoOptions } from './writer.ts';
import { assertLosslessJson } from './json.ts';
import { assertSessionId } from './paths.ts';
import { JOURNAL_FORMAT_VERSION, scanJournal, storeSource, type SkippedLine } from './reader.ts';
import { planRepair } from './repair.ts';
import type { JournalLease, JournalPrefix, JournalStore } from './store.ts';
import type { RepairReport, SessionJournal, SessionState } from './types.ts';

export interface StoreOptions {
  /** The store (default: the file store of `dataDir`). */
  readonly store?: JournalStore;
  /** The file store's data directory. Default: `$HARNESS_HOME`, else `~/.harness`. */
  readonly dataDir?: string;
}

export interface CreateJournalOptions extends JournalIoOptions, StoreOptions {
  /** Default: a random UUID. */
  readonly id?: string;
  readonly cwd?: string;
  /** The session this one was forked from, and the seq it was forked at. */
  readonly parent?: SessionHeader['parent'];
  /** The session that spawned this one (a subagent). */
  readonly parentSession?: SessionHeader['parentSession'];
  readonly importedFrom?: SessionHeader['importedFrom'];
  readonly createdAtMs?: number;
}

export interface OpenJournalOptions extends JournalIoOptions, StoreOptions {
  /**
   * Read-only salvage: skip corrupt lines (reported in `repairs.skippedLines`) instead of failing.
   * Nothing is locked, moved, repaired or written; the journal refuses `append`.
   */
  readonly salvage?: boolean;
}

export interface OpenedJournal {
  readonly journal: SessionJournal;
  readonly repairs: RepairReport;
}

/** The store of a call's options: the given one, else the file store of `dataDir`. */
export function storeOf(options: StoreOptions): JournalStore {
  return options.store ?? new FileJournalStore(options.dataDir !== undefined ? { dataDir: options.dataDir } : {});
}

function reportDiagnostic(bus: HookBus | undefined, level: 'warning' | 'info', code: string, message: string): void {
  if (bus !== undefined) bus.report({ level, code, source: 'session', message });
  else if (level === 'warning') process.emitWarning(message, { code });
}

function reportStaleLease(bus: HookBus | undefined, lease: JournalLease): void {
  if (lease.staleTakenOver === undefined) return;
  reportDiagnostic(bus, 'warning', 'JOURNAL_STALE_LOCK', `Took over the stale writer lock of ${basename(lease.location)} (pid ${lease.staleTakenOver.pid ?? 'unknown'} is gone).`);
}

/**
 * Creates session `header.id` in the store with `header` (and an optional prefix of event lines
 * whose fold is `prefixState`), durably, and opens it for writing with the lease held.
 * @internal Use `createJournal` / `forkSession` / `importJournal`.
 * @throws HarnessError `JOURNAL_EXISTS`, `JOURNAL_LOCKED`, the store's own errors.
 */
export async function createStoredJournal(
  store: JournalStore,
  header: SessionHeader,
  io: JournalIoOptions = {},
  prefix?: JournalPrefix & { readonly state: SessionState },
  headerLine = JSON.stringify(header),
): Promise<StoreJournal> {
  const lease = await store.create(header.id, headerLine, prefix !== undefined ? { prefix } : {});
  reportStaleLease(io.bus, lease);
  return new StoreJournal({ lease, header, state: prefix?.state ?? initialState(header.id), lastSeq: prefix?.lastSeq ?? 0, ...io });
}

/**
 * Starts a new session (file store: a journal at `<dataDir>/sessions/<id>.jsonl`) and opens it
 * for writing.
 * @throws HarnessError `INVALID_SESSION_ID`, `JOURNAL_EXISTS`, `JOURNAL_LOCKED`, the store's errors.
 */
export async function createJournal(options: CreateJournalOptions = {}): Promise<SessionJournal> {
  const id = options.id ?? randomUUID();
  assertSessionId(id);
  const header: SessionHeader = deepFreeze({
    type: 'session',
    version: JOURNAL_FORMAT_VERSION,
    id,
    createdAtMs: options.createdAtMs ?? (options.now ?? Date.now)(),
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.parent !== undefined ? { parent: options.parent } : {}),
    ...(options.parentSession !== undefined ? { parentSession: options.parentSession } : {}),
    ...(options.importedFrom !== undefined ? { importedFrom: options.importedFrom } : {}),
  });
  assertLosslessJson(header, 'header');
  return createStoredJournal(storeOf(options), header, options);
}

/**
 * Opens an existing session for writing (the agent loop resumes a session this way).
 *
 * Takes the writer lease (a dead writer's is taken over: a stale lock file with a diagnostic; a
 * database lease dies with its connection), reads and folds every line (streaming), and repairs
 * what a crash left:
 * - a torn last line (file store) is copied to `<id>.jsonl.torn-<ms>` (fsynced), and only then cut
 *   from the journal (the one sanctioned cut, of bytes now kept in the sidecar);
 * - an interrupted turn, step, model call, tool call or compaction is closed with synthetic
 *   events (see `planRepair`), appended and checkpointed.
 * In every error case nothing is modified and the lease is released.
 * @throws HarnessError `JOURNAL_NOT_FOUND`, `JOURNAL_LOCKED`, `JOURNAL_HEADER`, `JOURNAL_VERSION`,
 *   `JOURNAL_CORRUPT`, `UNKNOWN_EVENT_TYPE`.
 */
export async function openJournal(idOrPath: string, options: OpenJournalOptions = {}): Promise<OpenedJournal> {
  const store = storeOf(options);
  if (options.salvage) {
    const source = storeSource(store, idOrPath);
    const scan = await scanJournal(source, { salvage: true });
    const skippedLines: SkippedLine[] = [...scan.skipped, ...(scan.tornTail ? [scan.tornTail] : [])];
    return {
      journal: new ReadOnlyJournal(source.name, scan.header, scan.state, scan.lastSeq),
      repairs: { syntheticEvents: [], skippedLines },
    };
  }
  const lease = await store.lease(idOrPath);
  let journal: StoreJournal | undefined;
  try {
    const scan = await scanJournal(storeSource(store, idOrPath), { trackLiveCall: true });
    let tornTail: RepairReport['tornTail'];
    if (scan.tornTail !== undefined) {
      if (lease.moveTornTail === undefined) throw new Error(`${lease.location}: a torn last line in a store that writes whole batches`);
      tornTail = lease.moveTornTail(scan.tornTail);
    }
    journal = new StoreJournal({ lease, header: scan.header, state: scan.state, lastSeq: scan.lastSeq, ...options });
    reportStaleLease(options.bus, lease);
    const syntheticEvents: AnySessionEvent[] = [];
    for (const planned of planRepair(scan.state, scan.liveCall)) {
      syntheticEvents.push((await journal.append(planned.type, planned.data as never)) as AnySessionEvent);
    }
    if (syntheticEvents.length > 0 || tornTail !== undefined) {
      await journal.checkpoint();
      reportDiagnostic(
        options.bus,
        'info',
        'JOURNAL_REPAIRED',
        `Repaired ${basename(lease.location)}: ${tornTail ? `moved a torn last line (${tornTail.byteCount} bytes) to ${basename(tornTail.sidecarPath)}; ` : ''}${syntheticEvents.length} synthetic event(s) closed what a crash left open.`,
      );
    }
    return {
      journal,
      repairs: {
        ...(tornTail ? { tornTail } : {}),
        syntheticEvents,
        ...(lease.staleTakenOver ? { staleLock: lease.staleTakenOver } : {}),
      },
    };
  } catch (error) {
    if (journal !== undefined) await journal.abandon();
    else await lease.release().catch(() => undefined);
    throw error;
  }
}
