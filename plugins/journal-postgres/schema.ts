/**
 * The journal-postgres schema, created and migrated by version when a store opens.
 *
 * Why a versioned table and not a migration library: the whole schema is two tables and an index,
 * migrated in-process at startup (not from a CLI with a folder of migration files to ship), and
 * the one rule the libraries do not give — a database *newer* than the code is refused with a
 * coded error instead of being written by code that does not know its shape — is the point of
 * the check. So: `harness_schema(version)`, migrations as an ordered list of SQL, applied in one
 * transaction under a transaction-scoped advisory lock (two workers starting at once migrate
 * once; the second sees the new version).
 */
import { HarnessError } from '../../runtime/index.ts';

/**
 * What the migration needs of a connection; `pg`'s `Client` and `PoolClient` fit it. Structural so the
 * published .d.ts does not import `pg`, whose types (`@types/pg`) a user's install does not have.
 */
export interface MigrationClient {
  query<Row extends Record<string, unknown>>(text: string, values?: unknown[]): Promise<{ rows: Row[] }>;
}

/** The LISTEN/NOTIFY channel a store notifies once per appended batch (payload: `<seq> <sessionId>`). */
export const NOTIFY_CHANNEL = 'harness_journal';

/** The schema version this code reads and writes. */
export const SCHEMA_VERSION = 1;

/** Advisory lock key (a transaction lock) that serialises migrations: "hrns" "mig". */
const MIGRATION_LOCK_KEY = '5208329153488416359';

/** `MIGRATIONS[v - 1]` takes the schema from version v - 1 to v. Never edit one that shipped: add one. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE harness_sessions (
     id text PRIMARY KEY,
     header text NOT NULL,
     created_at_ms double precision NOT NULL,
     last_seq bigint NOT NULL DEFAULT 0,
     updated_at_ms double precision
   );
   CREATE TABLE harness_events (
     session_id text NOT NULL REFERENCES harness_sessions (id) ON DELETE CASCADE,
     seq bigint NOT NULL,
     type text NOT NULL,
     line text NOT NULL,
     PRIMARY KEY (session_id, seq)
   );
   CREATE INDEX harness_events_summary ON harness_events (session_id, seq)
     WHERE type IN ('turn/start', 'session/title', 'assistant/message', 'compaction/summary');`,
];

/**
 * Brings the database's schema to {@link SCHEMA_VERSION}.
 * @throws HarnessError `STORE_SCHEMA_TOO_NEW` when the database was migrated by newer code
 *   (details `version`, `supported`); nothing is changed then.
 */
export async function migrate(client: MigrationClient, location: string): Promise<{ from: number; to: number }> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    await client.query('CREATE TABLE IF NOT EXISTS harness_schema (version integer NOT NULL)');
    const { rows } = await client.query<{ version: number }>('SELECT version FROM harness_schema');
    if (rows.length === 0) await client.query('INSERT INTO harness_schema (version) VALUES (0)');
    const from = rows[0]?.version ?? 0;
    if (from > SCHEMA_VERSION) {
      throw new HarnessError(
        'STORE_SCHEMA_TOO_NEW',
        `The journal database ${location} has schema version ${from}; this Harness knows versions up to ${SCHEMA_VERSION}. It was migrated by a newer Harness: upgrade this one (the database was not changed).`,
        { details: { version: from, supported: SCHEMA_VERSION } },
      );
    }
    for (let version = from; version < SCHEMA_VERSION; version++) await client.query(MIGRATIONS[version]!);
    if (from !== SCHEMA_VERSION) await client.query('UPDATE harness_schema SET version = $1', [SCHEMA_VERSION]);
    await client.query('COMMIT');
    return { from, to: SCHEMA_VERSION };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
