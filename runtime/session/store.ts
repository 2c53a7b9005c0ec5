/**
 * The journal store seam (DESIGN "Sessions and the journal", "Stores").
 *
 * The runtime keeps a session's records as *lines*: the exact JSONL text the file store writes
 * (line 1 the header, then one event per line, key order `seq, type, atMs, data, ignorable`). A
 * store holds those lines and nothing else: parsing, validation, the fold, repair, fork, replay,
 * import and export all run above the seam on the lines a store returns, so they behave the same
 * on every store, and exporting any session gives the lines the file store would have written.
 *
 * What a store does:
 * - `create` a session (its header line, optionally a prefix of event lines, all durable before
 *   it resolves) and `lease` an existing one: both return a {@link JournalLease}, the one writer
 *   of that session (a second one gets `JOURNAL_LOCKED`);
 * - `read` a session's lines in seq order, `tail` the lines written after a seq as they come,
 *   `list` the sessions.
 * The journal (`journal.ts`) above it assigns seqs, folds, queues records and decides when to
 * write: one `lease.write` per flushed batch, `lease.sync` at checkpoints. The per-chunk append
 * never reaches the store.
 *
 * Stores: the JSONL file store (`FileJournalStore`, the embedded default, `<dataDir>/sessions`)
 * and whatever a plugin registers with {@link registerJournalStore} for a URL scheme (the
 * `journal-postgres` plugin registers `postgres:` and `postgresql:`). A harness picks one with its
 * config key `store` or `createHarness({ store })` (the CLI's `--store`).
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Disposer } from '../kernel/bus.ts';
import { HarnessError } from '../kernel/errors.ts';
import type { RawLine } from './lines.ts';
import type { SessionSummary } from './types.ts';

/**
 * One stored line: its text (no `\n`), its 1-based line number (the header is line 1; in a store
 * without gaps the event of seq `n` is line `n + 1`), and, in the file store, its byte range
 * (`start`/`end` are 0 in other stores). `terminated` is false only for a file's torn last line.
 */
export type JournalLine = RawLine;

/** Event lines to create a session with (a fork's or an import's prefix). */
export interface JournalPrefix {
  /** Seq of the last line (the lines are seq 1..lastSeq, contiguous). */
  readonly lastSeq: number;
  /** The event lines (no `\n`), in seq order, in batches. */
  readonly lines: AsyncIterable<readonly string[]>;
}

/**
 * The writer lease of one session: the only way to add lines to it. The journal calls `write`
 * once per flushed batch, never two at a time, and `sync` at checkpoints.
 */
export interface JournalLease {
  /** The session id in the store (for the file store: the journal's file name without `.jsonl`). */
  readonly id: string;
  /**
   * Where the session is, for messages and `SessionJournal.path`: a file path, or a store URL
   * without its password plus the session id. Never a secret.
   */
  readonly location: string;
  /** A dead writer's lease that this one took over (file store: the stale lock file's pid). */
  readonly staleTakenOver?: { readonly pid: number | null };
  /**
   * Appends event lines `firstSeq .. firstSeq + lines.length - 1` (each without `\n`) in one
   * operation: the file store's one `write(2)`, the PostgreSQL store's one transaction (committed,
   * so durable, when it resolves, with one `NOTIFY`). Resolves when readers can see the lines.
   * @throws on an I/O failure or a lost lease; the journal then refuses further appends
   *   (`JOURNAL_WRITE_FAILED`).
   */
  write(firstSeq: number, lines: readonly string[]): Promise<void>;
  /**
   * Optional, what the journal uses instead of `write` when a store has it: the same batch already
   * encoded — `bytes` is the UTF-8 of `lineCount` lines (seqs `firstSeq ..`), each ending in `\n`,
   * exactly `Buffer.from(lines.map((line) => line + '\n').join(''))`. The bytes are a view of a
   * buffer the journal reuses once the returned promise settles: copy them to keep them, and do not
   * settle while they are still being read. Same contract and errors as `write`.
   */
  writeBytes?(firstSeq: number, bytes: Uint8Array, lineCount: number): Promise<void>;
  /** Makes every written batch durable (file store: fsync; a store that commits each write: nothing). */
  sync(): Promise<void>;
  /** Gives the lease up (idempotent). Writing afterwards fails. */
  release(): Promise<void>;
  /**
   * The process is exiting without `close()` (file store only): write `pending` (the lines queued
   * and not in flight, or none) synchronously and release what can be released synchronously.
   * A store whose lease lives in a connection leaves this out: the connection's end releases it.
   */
  exitSync?(pending: readonly string[] | undefined): void;
  /**
   * Cuts a torn last line an open found (file store only: a store with atomic batches never has
   * one), keeping its bytes in a sidecar. Returns where they went.
   */
  moveTornTail?(tail: { readonly start: number }): { readonly sidecarPath: string; readonly byteCount: number };
}

/** Which event lines `JournalStore.read` yields: seqs `fromSeq..toSeq`, both inclusive. */
export interface ReadRange {
  /** The first event seq to yield (default 1). The header line is always yielded first. */
  readonly fromSeq?: number;
  /** The last event seq to yield (default: the last one). */
  readonly toSeq?: number;
}

/** Options of `JournalStore.tail`: where the tail starts, and what ends it. */
export interface TailOptions {
  /** Yield the event lines after this seq (0: from the first event). */
  readonly afterSeq: number;
  /** Ends the tail (the iterator returns). Without it the tail runs until the consumer returns. */
  readonly signal?: AbortSignal;
}

/** A place sessions live in. See the module comment. */
export interface JournalStore {
  /** `'file'`, `'postgres'`, …: which kind of store. */
  readonly kind: string;
  /** Where, for messages (a folder, a URL without its password). */
  readonly location: string;
  /** Events lines are atomic per write: a torn or unreadable last line is corruption, not a torn write. */
  readonly atomicWrites: boolean;
  /**
   * Creates session `id` with `headerLine` (the header's JSON text) and, optionally, a prefix of
   * event lines — all durable before it resolves, and never visible half-written — and returns
   * its writer lease.
   * @throws HarnessError `JOURNAL_EXISTS`, `JOURNAL_LOCKED`, `INVALID_SESSION_ID`, a store's own
   *   errors (`DATA_DIR_INVALID`, `STORE_UNAVAILABLE`, …).
   */
  create(id: string, headerLine: string, options?: { prefix?: JournalPrefix }): Promise<JournalLease>;
  /**
   * Takes the writer lease of an existing session (a dead writer's lease is taken over).
   * @throws HarnessError `JOURNAL_NOT_FOUND`, `JOURNAL_LOCKED` (a live writer holds it).
   */
  lease(id: string): Promise<JournalLease>;
  /**
   * A session's lines: the header line, then the event lines of the range, in seq order, in
   * batches (streaming: memory does not grow with the session). Lines are as stored; checking
   * them is the reader's job (`scanJournal`).
   * @throws HarnessError `JOURNAL_NOT_FOUND`.
   */
  read(id: string, range?: ReadRange): AsyncIterable<readonly JournalLine[]>;
  /**
   * The event lines written after `afterSeq`, live: first what is already there, then each batch
   * as it is written, until `signal` aborts or the consumer returns. Never skips or repeats a
   * seq: a missed wake-up costs latency, never a line.
   * @throws HarnessError `JOURNAL_NOT_FOUND`.
   */
  tail(id: string, options: TailOptions): AsyncIterable<readonly JournalLine[]>;
  /** Every session's summary, most recently updated first (unreadable ones last, with `error`). */
  list(): Promise<SessionSummary[]>;
  /**
   * Which of the sessions `ids` a live writer holds the lease of right now, in any process (a
   * dead writer's lease does not count): with a summary's `openTurn`, a turn running anywhere.
   * One query (or one look at each lock) for all of them. Optional: a store that cannot tell
   * leaves it out.
   */
  liveWriters?(ids: readonly string[]): Promise<ReadonlySet<string>>;
  /** The store's location of a session (what `JournalLease.location` will say). */
  locationOf(id: string): string;
  /** Releases the store's own resources (connections). Leases must be released first. */
  close(): Promise<void>;
}

/** Makes a store for a URL of a registered scheme. */
export type JournalStoreFactory = (url: string, context: { readonly dataDir: string }) => JournalStore | Promise<JournalStore>;

/** Registered factories per scheme, with who registered each; the last one serves (a hot reload registers the new generation before the old one is disposed). */
const factories = new Map<string, { factory: JournalStoreFactory; owner: string | undefined }[]>();

/**
 * Registers the store for URLs of `scheme` (without `:`, e.g. `'postgres'`). Returns the disposer
 * (hand it to `ctx.onDispose`). The runtime never imports a store plugin: loading the plugin is
 * what makes its scheme usable. While two registrations of a scheme exist (a plugin being
 * hot-reloaded), the newer one serves; disposing it brings back the older.
 *
 * `owner` names who registers (a plugin passes `ctx.plugin.name`): registrations of one owner
 * stack as above, but a scheme another owner holds is refused — two different stores answering
 * `postgres:` would make which one serves depend on load order.
 * @throws HarnessError `INVALID_ARGUMENTS` for a bad scheme; `DUPLICATE_STORE` for a scheme
 *   registered by another owner (naming it).
 */
export function registerJournalStore(scheme: string, factory: JournalStoreFactory, owner?: string): Disposer {
  if (typeof scheme !== 'string' || !/^[a-z][a-z0-9+.-]*$/.test(scheme) || scheme === 'file') {
    throw new HarnessError('INVALID_ARGUMENTS', `A journal store scheme is a lower-case URL scheme without ":" (not "file"); got ${JSON.stringify(scheme)}.`);
  }
  const list = factories.get(scheme) ?? [];
  const other = list.find((entry) => entry.owner !== owner);
  if (other !== undefined) {
    throw new HarnessError(
      'DUPLICATE_STORE',
      `The journal store scheme "${scheme}:" is registered by ${other.owner === undefined ? 'an unnamed caller' : `"${other.owner}"`}; ${owner === undefined ? 'this caller' : `"${owner}"`} cannot register it too. Load one store plugin per scheme.`,
      { details: { scheme, ...(other.owner !== undefined ? { owner: other.owner } : {}), ...(owner !== undefined ? { by: owner } : {}) } },
    );
  }
  const entry = { factory, owner };
  list.push(entry);
  factories.set(scheme, list);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const index = list.lastIndexOf(entry);
    if (index >= 0) list.splice(index, 1);
    if (list.length === 0 && factories.get(scheme) === list) factories.delete(scheme);
  };
}

/** The schemes that have a registered store now (for diagnostics and tests). */
export function registeredStoreSchemes(): string[] {
  return [...factories.keys()].sort();
}

/**
 * The data directory a `file:` store spec names, or undefined when it names none: `'file'` (the
 * data directory of the config, `--data-dir` or `$HARNESS_HOME`), `file:<dir>` (relative to
 * `baseDir`) or `file:///abs/dir`. Not a `file` spec: undefined too (check {@link isFileStoreSpec}).
 */
export function fileStoreDir(spec: string, baseDir: string): string | undefined {
  if (!isFileStoreSpec(spec) || spec === 'file') return undefined;
  const rest = spec.slice('file:'.length);
  if (rest.startsWith('//')) return fileURLToPath(spec);
  if (rest === '') throw new HarnessError('INVALID_ARGUMENTS', 'The store "file:" names no directory: give file:<dir> (the data directory; journals go in <dir>/sessions), or just "file".');
  return resolve(baseDir, rest);
}

/** True for the file store's specs: `file`, `file:<dir>`, `file:///dir`. */
export function isFileStoreSpec(spec: string): boolean {
  return spec === 'file' || spec.startsWith('file:');
}

/** The scheme of a store URL (`postgres://…` → `postgres`), or undefined for none. */
export function storeScheme(spec: string): string | undefined {
  const match = /^([a-z][a-z0-9+.-]*):/i.exec(spec);
  return match?.[1]?.toLowerCase();
}

/** A store URL with its password (and any `password=` parameter) masked, for messages. */
export function redactStoreUrl(spec: string): string {
  try {
    const url = new URL(spec);
    if (url.password) url.password = '***';
    for (const key of [...url.searchParams.keys()]) if (/pass|secret|token/i.test(key)) url.searchParams.set(key, '***');
    return url.toString();
  } catch {
    return spec.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
  }
}

/**
 * Opens the store a URL names through the factory registered for its scheme.
 * @throws HarnessError `UNKNOWN_STORE` (no plugin registered the scheme: it names the plugin to
 *   load), the factory's own errors.
 */
export async function openRegisteredStore(spec: string, context: { readonly dataDir: string }): Promise<JournalStore> {
  const scheme = storeScheme(spec);
  const factory = scheme === undefined ? undefined : factories.get(scheme)?.at(-1)?.factory;
  if (factory === undefined) {
    const known = [...factories.keys()].map((s) => `${s}:`);
    throw new HarnessError(
      'UNKNOWN_STORE',
      `No journal store for ${JSON.stringify(redactStoreUrl(spec))}: give "file" (the default) or a URL of a registered scheme${known.length ? ` (${known.join(', ')})` : ''}. A postgres:// URL needs the journal-postgres plugin in the config's plugins.`,
      { details: { store: redactStoreUrl(spec), ...(scheme ? { scheme } : {}) } },
    );
  }
  return factory(spec, context);
}
