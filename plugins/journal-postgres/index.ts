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

export { openPostgresStore, PostgresJournalStore, NOTIFY_CHANNEL, type PostgresStoreOptions } from './store.ts';
export { SCHEMA_VERSION } from './schema.ts';

// `pg` is loaded only when a postgres store is opened: a config that lists this plugin costs nothing otherwise.
// At the top level, not inside `setup`: tsc 5.9 leaves a dynamic import's `.ts` unrewritten in a
// context-sensitive function of a generic call (dist would import ./store.ts; scripts/dist-imports.mjs checks).
const loadStore = () => import('./store.ts');

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
