/**
 * The PostgreSQL journal store (DESIGN "Stores"): the same lines as the file store, in
 * `harness_events (session_id, seq)`, each row's `line` the exact record text — so exporting a
 * session gives the lines the file store writes, byte for byte.
 *
 * - **Writes.** One `lease.write` (one flushed batch of the journal) is one statement, so one
 *   transaction: it inserts the batch's rows, advances `harness_sessions.last_seq` by
 *   compare-and-set (the batch must start right after the stored last seq) and queues one
 *   `NOTIFY harness_journal`; it is committed — durable — when `write` resolves, before any
 *   checkpoint returns. The per-chunk append never reaches the database.
 * - **One writer per session: a session-level advisory lock held by the writer's own
 *   connection** (`pg_try_advisory_lock(hashtextextended(id, seed))`), chosen over a lease row with
 *   a fencing token because the database ends it exactly when the writer's connection ends — a
 *   killed writer loses it at once, with no expiry to tune and no clock — and because every write
 *   goes through that same connection, a writer that lost its lock has lost the connection it
 *   would write with. The `last_seq` compare-and-set is the second fence: no seq is ever written
 *   twice (the primary key is the third). A second writer gets `JOURNAL_LOCKED`. The cost: a
 *   dedicated connection per open session (not through a transaction-pooling proxy).
 * - **Live tail.** `LISTEN harness_journal` on one connection per store; a notification
 *   (`"<lastSeq> <id>"`, one per committed batch) wakes the tails of that session, which read
 *   `seq > last` in order. Tails also poll (`tailPollMs`), so a missed notification costs latency,
 *   never a line.
 * - **Schema** created and migrated at open (`schema.ts`); a newer database is refused.
 */
import pg from 'pg';
import {
  HarnessError,
  RECORD_ENVELOPE,
  redactStoreUrl,
  sortSummaries,
  Summarizer,
  type JournalLease,
  type JournalLine,
  type JournalPrefix,
  type JournalStore,
  type ReadRange,
  type SessionSummary,
  type TailOptions,
} from '../../runtime/index.ts';
import { migrate, NOTIFY_CHANNEL } from './schema.ts';

export { NOTIFY_CHANNEL };

/** Seed of the advisory lock keys of sessions (`hashtextextended(id, seed)`): "Harn". */
const LOCK_SEED = 1214345838;
/** Rows per read query. */
const PAGE_ROWS = 5000;
/** Rows per insert statement when a session is created with a prefix (fork, import). */
const PREFIX_ROWS = 2000;
const SUMMARY_TYPES = ['turn/start', 'turn/end', 'session/title', 'assistant/message', 'compaction/summary'];

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` (any libpq-style URL `pg` takes). */
  readonly url: string;
  /** How often a tail looks for new rows when no notification came (ms, default 1000). */
  readonly tailPollMs?: number;
  /** Connections for reads and listing (default 4). Writers have their own connection each. */
  readonly poolSize?: number;
}

const WRITE_BATCH = `WITH s AS (
    UPDATE harness_sessions SET last_seq = $3, updated_at_ms = COALESCE($4, updated_at_ms)
    WHERE id = $1 AND last_seq = $2 RETURNING id
  ), ins AS (
    INSERT INTO harness_events (session_id, seq, type, line)
    SELECT s.id, $2 + u.i, u.type, u.line FROM s, unnest($5::text[], $6::text[]) WITH ORDINALITY AS u(type, line, i)
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM ins)::int AS n, pg_notify('${NOTIFY_CHANNEL}', $3 || ' ' || $1) AS notified`;

/** The type and atMs of a record line (its envelope; else its JSON). */
function envelopeOf(line: string): { type: string; atMs: number | null } {
  const match = RECORD_ENVELOPE.exec(line);
  if (match !== null) return { type: match[2]!, atMs: Number(match[3]) };
  try {
    const value = JSON.parse(line) as { type?: unknown; atMs?: unknown };
    return { type: typeof value.type === 'string' ? value.type : '', atMs: typeof value.atMs === 'number' ? value.atMs : null };
  } catch {
    return { type: '', atMs: null };
  }
}

/** Runs one batch insert on `client`; the batch must start right after `prevSeq`. */
async function insertBatch(client: pg.ClientBase, id: string, prevSeq: number, lines: readonly string[], location: string): Promise<void> {
  const types: string[] = new Array(lines.length);
  let lastAtMs: number | null = null;
  for (let i = 0; i < lines.length; i++) {
    const envelope = envelopeOf(lines[i]!);
    types[i] = envelope.type;
    if (envelope.atMs !== null) lastAtMs = envelope.atMs;
  }
  const lastSeq = prevSeq + lines.length;
  const result = await client.query<{ n: number }>(WRITE_BATCH, [id, prevSeq, lastSeq, lastAtMs, types, lines]);
  if (result.rows[0]?.n !== lines.length) {
    throw new HarnessError('JOURNAL_LEASE_LOST', `${location}: the batch of seq ${prevSeq + 1}..${lastSeq} does not follow the stored last seq; another writer wrote to this session. Reopen it.`, {
      details: { location, firstSeq: prevSeq + 1 },
    });
  }
}

/** The writer lease of one session: a connection holding the session's advisory lock. */
class PostgresLease implements JournalLease {
  private lost: unknown;
  private released = false;

  constructor(
    readonly id: string,
    readonly location: string,
    private readonly client: pg.Client,
    private lastSeq: number,
  ) {
    client.on('error', (error) => {
      this.lost = error;
    });
  }

  async write(firstSeq: number, lines: readonly string[]): Promise<void> {
    if (this.released) throw new HarnessError('JOURNAL_CLOSED', `${this.location}: the writer lease was released.`);
    if (this.lost !== undefined) throw this.lostError();
    if (firstSeq !== this.lastSeq + 1) {
      throw new HarnessError('JOURNAL_CORRUPT', `${this.location}: a batch starting at seq ${firstSeq} cannot follow seq ${this.lastSeq}.`, { details: { location: this.location, firstSeq } });
    }
    try {
      await insertBatch(this.client, this.id, this.lastSeq, lines, this.location);
    } catch (error) {
      if (this.lost !== undefined) throw this.lostError();
      throw error;
    }
    this.lastSeq += lines.length;
  }

  /** Every write is a committed transaction already. */
  async sync(): Promise<void> {
    if (this.lost !== undefined) throw this.lostError();
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    // Ending the connection ends the advisory lock with it.
    await this.client.end().catch(() => undefined);
  }

  private lostError(): HarnessError {
    const cause = this.lost;
    return new HarnessError(
      'JOURNAL_LEASE_LOST',
      `${this.location}: the writer's database connection was lost (${cause instanceof Error ? cause.message : String(cause)}); its lease went with it. Reopen the session.`,
      {
        cause,
        details: { location: this.location },
      },
    );
  }
}

/** One LISTEN connection per store, fanning notifications out to the tails of each session. */
class Listener {
  private client: pg.Client | undefined;
  private connecting: Promise<void> | undefined;
  private readonly subscribers = new Map<string, Set<() => void>>();
  private retry: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly connect: () => Promise<pg.Client>) {}

  subscribe(id: string, wake: () => void): () => void {
    let set = this.subscribers.get(id);
    if (set === undefined) {
      set = new Set();
      this.subscribers.set(id, set);
    }
    set.add(wake);
    void this.ensure();
    return () => {
      set!.delete(wake);
      if (set!.size === 0) this.subscribers.delete(id);
    };
  }

  private ensure(): Promise<void> {
    if (this.closed || this.client !== undefined) return Promise.resolve();
    if (this.connecting !== undefined) return this.connecting;
    this.connecting = (async () => {
      try {
        const client = await this.connect();
        client.on('notification', (message) => {
          const payload = message.payload ?? '';
          const id = payload.slice(payload.indexOf(' ') + 1);
          for (const wake of this.subscribers.get(id) ?? []) wake();
        });
        client.on('error', () => {
          // Lost: tails go on polling; listen again shortly, and wake every tail to catch up.
          if (this.client === client) this.client = undefined;
          client.end().catch(() => undefined);
          this.scheduleRetry();
        });
        await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
        if (this.closed) await client.end();
        else {
          this.client = client;
          // Anything committed while not listening: let every tail look.
          for (const set of this.subscribers.values()) for (const wake of set) wake();
        }
      } catch {
        this.scheduleRetry();
      } finally {
        this.connecting = undefined;
      }
    })();
    return this.connecting;
  }

  private scheduleRetry(): void {
    if (this.closed || this.retry !== undefined || this.subscribers.size === 0) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.ensure();
    }, 1000);
    this.retry.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== undefined) clearTimeout(this.retry);
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}

/** The PostgreSQL journal store (see the module comment). Open it with {@link openPostgresStore}. */
export class PostgresJournalStore implements JournalStore {
  readonly kind = 'postgres';
  readonly atomicWrites = true;
  readonly location: string;
  private readonly config: pg.ClientConfig;
  private readonly pool: pg.Pool;
  private readonly listener: Listener;
  private readonly tailPollMs: number;

  /** @internal Use {@link openPostgresStore} (it migrates the schema first). */
  constructor(options: PostgresStoreOptions) {
    this.location = redactStoreUrl(options.url);
    this.config = { connectionString: options.url, application_name: `harness-${process.pid}` };
    this.pool = new pg.Pool({ ...this.config, max: options.poolSize ?? 4 });
    this.pool.on('error', () => undefined); // an idle connection that died: the pool replaces it
    this.listener = new Listener(() => this.connect());
    this.tailPollMs = options.tailPollMs ?? 1000;
  }

  /** @internal */
  async migrate(): Promise<void> {
    const client = await this.connect();
    try {
      await migrate(client, this.location);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  locationOf(id: string): string {
    return `${this.location}#${id}`;
  }

  /** A new connection of its own. @throws HarnessError `STORE_UNAVAILABLE`. */
  private async connect(): Promise<pg.Client> {
    const client = new pg.Client(this.config);
    client.on('error', () => undefined); // owners add their own; an unowned error must not crash the process
    try {
      await client.connect();
    } catch (error) {
      throw this.unavailable(error);
    }
    return client;
  }

  private unavailable(error: unknown): HarnessError {
    return new HarnessError(
      'STORE_UNAVAILABLE',
      `Cannot reach the journal database ${this.location} (${error instanceof Error ? error.message : String(error)}); check the URL and that the server is running.`,
      {
        cause: error,
        details: { location: this.location },
      },
    );
  }

  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      if (error instanceof Error && 'code' in error && typeof (error as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code)) throw error;
      throw this.unavailable(error);
    }
  }

  private notFound(id: string): HarnessError {
    return new HarnessError('JOURNAL_NOT_FOUND', `No session ${JSON.stringify(id)} in ${this.location}.`, { details: { location: this.location, sessionId: id } });
  }

  private async lockFor(client: pg.Client, id: string): Promise<void> {
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, $2)) AS locked', [id, LOCK_SEED]);
    if (rows[0]?.locked === true) return;
    let holder: string | undefined;
    try {
      const found = await client.query<{ pid: number; application_name: string }>(
        `SELECT a.pid, a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
           AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1, $2) LIMIT 1`,
        [id, LOCK_SEED],
      );
      const row = found.rows[0];
      if (row !== undefined) holder = `${row.application_name || 'a client'} (server pid ${row.pid})`;
    } catch {
      // the holder is only for the message
    }
    throw new HarnessError(
      'JOURNAL_LOCKED',
      `Session ${id} in ${this.location} is open for writing by ${holder ?? 'another connection'}. One writer per session: wait for it to close, or read the session without writing.`,
      { details: { location: this.location, sessionId: id, ...(holder ? { holder } : {}) } },
    );
  }

  async create(id: string, headerLine: string, options: { prefix?: JournalPrefix } = {}): Promise<JournalLease> {
    let createdAtMs: number;
    try {
      createdAtMs = (JSON.parse(headerLine) as { createdAtMs: number }).createdAtMs;
    } catch (error) {
      throw new HarnessError('JOURNAL_HEADER', `The header of session ${id} is not JSON.`, { cause: error });
    }
    const client = await this.connect();
    let inTransaction = false;
    try {
      await this.lockFor(client, id);
      await client.query('BEGIN');
      inTransaction = true;
      const inserted = await client.query('INSERT INTO harness_sessions (id, header, created_at_ms) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [id, headerLine, createdAtMs]);
      if (inserted.rowCount !== 1) {
        throw new HarnessError('JOURNAL_EXISTS', `Session ${id} already exists in ${this.location}; open it, or pick another session id.`, { details: { location: this.location, sessionId: id } });
      }
      let lastSeq = 0;
      if (options.prefix !== undefined) {
        // The whole copy in this one transaction: a fork or import cut midway never exists.
        let pending: string[] = [];
        for await (const lines of options.prefix.lines) {
          for (const line of lines) pending.push(line);
          while (pending.length >= PREFIX_ROWS) {
            const batch = pending.slice(0, PREFIX_ROWS);
            pending = pending.slice(PREFIX_ROWS);
            await insertBatch(client, id, lastSeq, batch, this.locationOf(id));
            lastSeq += batch.length;
          }
        }
        if (pending.length > 0) {
          await insertBatch(client, id, lastSeq, pending, this.locationOf(id));
          lastSeq += pending.length;
        }
        if (lastSeq !== options.prefix.lastSeq) {
          throw new HarnessError('JOURNAL_CORRUPT', `The prefix of session ${id} held ${lastSeq} events where ${options.prefix.lastSeq} were expected.`, { details: { sessionId: id } });
        }
      }
      await client.query('COMMIT');
      inTransaction = false;
      return new PostgresLease(id, this.locationOf(id), client, lastSeq);
    } catch (error) {
      if (inTransaction) await client.query('ROLLBACK').catch(() => undefined);
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  async lease(id: string): Promise<JournalLease> {
    const client = await this.connect();
    try {
      await this.lockFor(client, id);
      // Read under the lock: no writer can move last_seq now.
      const { rows } = await client.query<{ last_seq: string }>('SELECT last_seq FROM harness_sessions WHERE id = $1', [id]);
      if (rows.length === 0) throw this.notFound(id);
      return new PostgresLease(id, this.locationOf(id), client, Number(rows[0]!.last_seq));
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  async *read(id: string, range: ReadRange = {}): AsyncGenerator<readonly JournalLine[], void, undefined> {
    const head = await this.query<{ header: string }>('SELECT header FROM harness_sessions WHERE id = $1', [id]);
    if (head.rows.length === 0) throw this.notFound(id);
    yield [{ text: head.rows[0]!.header, lineNumber: 1, start: 0, end: 0, terminated: true }];
    let after = Math.max(0, (range.fromSeq ?? 1) - 1);
    const toSeq = range.toSeq ?? Number.MAX_SAFE_INTEGER;
    for (;;) {
      const page = await this.page(id, after, toSeq);
      if (page.length > 0) {
        yield page;
        after = page[page.length - 1]!.lineNumber - 1;
      }
      if (page.length < PAGE_ROWS) return;
    }
  }

  /** Up to PAGE_ROWS lines with `after < seq <= toSeq`, in order. */
  private async page(id: string, after: number, toSeq: number): Promise<JournalLine[]> {
    const { rows } = await this.query<{ seq: string; line: string }>('SELECT seq, line FROM harness_events WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4', [
      id,
      after,
      toSeq,
      PAGE_ROWS,
    ]);
    const out: JournalLine[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      out[i] = { text: row.line, lineNumber: Number(row.seq) + 1, start: 0, end: 0, terminated: true };
    }
    return out;
  }

  async *tail(id: string, options: TailOptions): AsyncGenerator<readonly JournalLine[], void, undefined> {
    const signal = options.signal;
    let dirty = true;
    let wake: (() => void) | undefined;
    const poke = (): void => {
      dirty = true;
      const w = wake;
      wake = undefined;
      w?.();
    };
    // Subscribe before the first read: a batch committed in between still sets `dirty`.
    const unsubscribe = this.listener.subscribe(id, poke);
    signal?.addEventListener('abort', poke, { once: true });
    try {
      const head = await this.query('SELECT 1 FROM harness_sessions WHERE id = $1', [id]);
      if (head.rows.length === 0) throw this.notFound(id);
      let last = options.afterSeq;
      while (signal?.aborted !== true) {
        dirty = false;
        const page = await this.page(id, last, Number.MAX_SAFE_INTEGER);
        if (page.length > 0) {
          last = page[page.length - 1]!.lineNumber - 1;
          yield page;
          if (page.length === PAGE_ROWS) continue;
        }
        if (dirty || (signal as AbortSignal | undefined)?.aborted === true) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.tailPollMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    } finally {
      signal?.removeEventListener('abort', poke);
      unsubscribe();
    }
  }

  async list(): Promise<SessionSummary[]> {
    const sessions = await this.query<{ id: string; header: string; last_seq: string; updated_at_ms: number | null }>('SELECT id, header, last_seq, updated_at_ms FROM harness_sessions', []);
    const lines = await this.query<{ session_id: string; line: string }>('SELECT session_id, line FROM harness_events WHERE type = ANY($1::text[]) ORDER BY session_id, seq', [SUMMARY_TYPES]);
    const byId = new Map<string, string[]>();
    for (const row of lines.rows) {
      let list = byId.get(row.session_id);
      if (list === undefined) {
        list = [];
        byId.set(row.session_id, list);
      }
      list.push(row.line);
    }
    const out: SessionSummary[] = [];
    for (const row of sessions.rows) {
      const location = this.locationOf(row.id);
      const summary = new Summarizer(location);
      try {
        summary.line(row.header);
        const own = byId.get(row.id) ?? [];
        for (const line of own) summary.line(line);
        summary.skipped(row.updated_at_ms ?? undefined, Number(row.last_seq) - own.length);
        out.push(summary.finish(location, summary.header!.createdAtMs));
      } catch (error) {
        const info = HarnessError.is(error) ? { code: error.code, message: error.message } : { code: 'UNREADABLE', message: String((error as Error)?.message ?? error) };
        out.push({ id: row.id, path: location, turnCount: 0, usage: {}, eventCount: 0, lastUpdateAtMs: 0, error: info });
      }
    }
    return sortSummaries(out);
  }

  /** Sessions of `ids` whose advisory lock (the writer's lease) a connection to this database holds now. */
  async liveWriters(ids: readonly string[]): Promise<ReadonlySet<string>> {
    if (ids.length === 0) return new Set();
    // Advisory locks are per database: only this database's count (a cluster may hold others with the same ids).
    const { rows } = await this.query<{ id: string }>(
      `SELECT s.id FROM unnest($1::text[]) AS s(id)
       WHERE hashtextextended(s.id, $2) IN (
         SELECT (l.classid::bigint << 32) | l.objid::bigint FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))`,
      [ids, LOCK_SEED],
    );
    return new Set(rows.map((row) => row.id));
  }

  async close(): Promise<void> {
    await this.listener.close();
    await this.pool.end().catch(() => undefined);
  }
}

/**
 * Opens (and migrates) a PostgreSQL journal store.
 * @throws HarnessError `STORE_UNAVAILABLE` (the server cannot be reached), `STORE_SCHEMA_TOO_NEW`.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresJournalStore> {
  const store = new PostgresJournalStore(options);
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
