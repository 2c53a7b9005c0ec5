/**
 * The two stores the contract runs against, opened the same way from a spec string: `file:<dir>`
 * (the JSONL file store) or a `postgres://` URL (the journal-postgres plugin's store).
 */
import { FileJournalStore, type JournalStore } from '../../runtime/index.ts';
import { openPostgresStore } from '../../plugins/journal-postgres/index.ts';

export async function openStore(spec: string): Promise<JournalStore> {
  if (spec.startsWith('file:')) return new FileJournalStore({ dataDir: spec.slice('file:'.length) });
  return openPostgresStore({ url: spec, tailPollMs: 200 });
}
