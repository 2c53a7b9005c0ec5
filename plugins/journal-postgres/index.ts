/**
 * journal-postgres — sessions in PostgreSQL (DESIGN "Stores"; issue 18).
 *
 * Loading this plugin registers the `postgres:` and `postgresql:` store URLs; a harness uses the
 * store when its config says `store: 'postgres://user@host:5432/db'` (or `createHarness({ store })`,
 * the CLI's `--store`). The schema is created and migrated when the store opens; a database
 * migrated by a newer Harness is refused (`STORE_SCHEMA_TOO_NEW`). How records, writes, the
 * one-writer lease and the live tail work: `store.ts`.
 *
 * Config: `{ tailPollMs?: number }` — how often a live tail looks for rows when no notification
 * came (ms, default 1000; a missed `NOTIFY` costs at most this much latency, never an event).
 * Embedders can also open the store directly: `openPostgresStore({ url })`.
 */
import { definePlugin, registerJournalStore, z } from '../../runtime/index.ts';

import type { PostgresJournalStore, PostgresStoreOptions } from './store.ts';

export type { PostgresJournalStore, PostgresStoreOptions } from './store.ts';
export { NOTIFY_CHANNEL, SCHEMA_VERSION } from './schema.ts';

// `pg` is loaded only when a postgres store is opened: the default stack lists this plugin, and a
// run on the file store should not pay for loading `pg` (so nothing here imports store.ts eagerly:
// test/store/lazy-pg.test.ts). At the top level, not inside `setup`: tsc 5.9 leaves a dynamic
// import's `.ts` unrewritten in a context-sensitive function of a generic call (dist would import
// ./store.ts; scripts/dist-imports.mjs checks).
const loadStore = () => import('./store.ts');

/**
 * Opens a PostgreSQL journal store directly (embedders, tools), creating or migrating its schema
 * (DESIGN "Stores"). Loads `pg` on first use.
 * @throws HarnessError `STORE_SCHEMA_TOO_NEW` for a database migrated by a newer Harness; the
 *   connection's own error when the server cannot be reached.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresJournalStore> {
  return (await loadStore()).openPostgresStore(options);
}

export default definePlugin({
  name: 'journal-postgres',
  config: z.strictObject({ tailPollMs: z.number().int().positive().default(1000) }).default({ tailPollMs: 1000 }),
  setup(ctx, config) {
    const factory = async (url: string) => (await loadStore()).openPostgresStore({ url, tailPollMs: config.tailPollMs });
    // Owned by the plugin's name: a reload of this plugin stacks, another plugin's postgres: is DUPLICATE_STORE.
    ctx.onDispose(registerJournalStore('postgres', factory, ctx.plugin.name));
    ctx.onDispose(registerJournalStore('postgresql', factory, ctx.plugin.name));
  },
});
