/**
 * Moving sessions between stores (`harness export <id>`, `harness import harness <file>`): a
 * session leaves a store as its JSONL lines, exactly as the file store holds them, and comes back
 * in verbatim — so export → import → export is byte-equal, whatever the stores.
 */
import { HarnessError } from '../kernel/errors.ts';
import type { SessionHeader } from './events.ts';
import { joinLines } from './file-store.ts';
import { lineBatches } from './lines.ts';
import { assertSessionId } from './paths.ts';
import { fileSource, scanJournal, storeSource, type SkippedLine } from './reader.ts';
import type { JournalStore } from './store.ts';

/**
 * Writes session `id` of `store` as JSONL through `write` (header line first, one `\n` after
 * each line), in batches. The session is checked while it is read (a bad header, a corrupt line,
 * a gap in seq fail before anything wrong is written); a torn last line of a file is left out.
 * Resolves with what was written.
 * @throws HarnessError `JOURNAL_NOT_FOUND`, the reader's `JOURNAL_*` errors.
 */
export async function exportSession(
  store: JournalStore,
  id: string,
  write: (text: string) => void | Promise<void>,
): Promise<{ header: SessionHeader; lastSeq: number; lineCount: number; tornTail?: SkippedLine }> {
  // One pass that checks (the fold is what rejects a damaged session), one that copies: a
  // session is never half-exported because line 900 000 was bad.
  const scan = await scanJournal(storeSource(store, id), { fold: false });
  let lineCount = 0;
  let done = false;
  for await (const lines of store.read(id, { toSeq: scan.lastSeq })) {
    const complete: string[] = [];
    for (const line of lines) {
      if (!line.terminated || lineCount === scan.lastSeq + 1) {
        done = true;
        break;
      }
      complete.push(line.text);
      lineCount++;
    }
    if (complete.length > 0) await write(joinLines(complete));
    if (done) break;
  }
  return { header: scan.header, lastSeq: scan.lastSeq, lineCount, ...(scan.tornTail ? { tornTail: scan.tornTail } : {}) };
}

/** Options of `importJournal(path, options)`. */
export interface ImportJournalOptions {
  /** The store to import into. */
  readonly store: JournalStore;
}

/**
 * Loads a Harness JSONL journal file into `store` under its own id, verbatim: the header line and
 * every event line as they are (an interrupted turn stays open; the next `openJournal` repairs it).
 * The file is read and checked first (header, version, seqs, the fold); a torn last line is left
 * out and reported.
 * @throws HarnessError `JOURNAL_NOT_FOUND`, `JOURNAL_HEADER`, `JOURNAL_VERSION`, `JOURNAL_CORRUPT`,
 *   `UNKNOWN_EVENT_TYPE`, `JOURNAL_EXISTS` (the id is taken in the store), `JOURNAL_LOCKED`.
 */
export async function importJournal(path: string, options: ImportJournalOptions): Promise<{ header: SessionHeader; lastSeq: number; location: string; tornTail?: SkippedLine }> {
  const scan = await scanJournal(fileSource(path));
  const header = scan.header;
  assertSessionId(header.id);
  const lastSeq = scan.lastSeq;
  async function* eventLines(): AsyncGenerator<readonly string[], void, undefined> {
    let seen = 0;
    let first = true;
    for await (const lines of lineBatches(path)) {
      const out: string[] = [];
      for (const line of lines) {
        if (first) {
          first = false;
          continue;
        }
        if (seen >= lastSeq) break;
        out.push(line.text);
        seen++;
      }
      if (out.length > 0) yield out;
      if (seen >= lastSeq) return;
    }
  }
  const first = await firstLine(path);
  const lease = await options.store.create(header.id, first, { prefix: { lastSeq, lines: eventLines() } });
  const location = lease.location;
  await lease.release();
  return { header, lastSeq, location, ...(scan.tornTail ? { tornTail: scan.tornTail } : {}) };
}

async function firstLine(path: string): Promise<string> {
  for await (const lines of lineBatches(path)) {
    const line = lines[0];
    if (line !== undefined) return line.text;
  }
  throw new HarnessError('JOURNAL_HEADER', `${path} is empty.`, { details: { path } });
}
