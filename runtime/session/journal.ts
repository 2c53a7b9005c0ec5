/**
 * The journal's entry points, in one place (DESIGN "Sessions and the journal"): the writer
 * (`writer.ts`), creating and opening with repair (`open.ts`) on any store (`store.ts`; the JSONL
 * file store is `file-store.ts`, its torn-tail cut `torn-tail.ts`, its fs helpers `fs.ts`).
 */
export { StoreJournal, FileJournal, ReadOnlyJournal, serializeEvent, eventLine, type JournalIoOptions } from './writer.ts';
export { createJournal, openJournal, createStoredJournal, storeOf, type CreateJournalOptions, type OpenJournalOptions, type OpenedJournal, type StoreOptions } from './open.ts';
