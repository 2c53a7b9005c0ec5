/**
 * The file store's live tail follows a journal another writer appends to (issue 19, `harness view`
 * of a session another process runs): a line written in pieces — a torn last line, as a reader
 * can see one mid-write — is waited for and then given once, never reported or skipped; after a
 * torn tail is moved aside and the journal goes on, the tail goes on with the new lines. The
 * cross-process end to end (a `harness run` watched by `harness view`) is test/store/view-live.test.ts.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileJournalStore, readJournal, type AnySessionEvent, type JournalLine } from '../../runtime/index.ts';
import { createJournal, openJournal } from '../../runtime/internal.ts';
import { tempDir } from '../cli/support.ts';

const home = tempDir('store-file-tail');
afterAll(() => home.cleanup());

/** Collects a tail's lines until `until` is true; fails when it has not come within 60 s (a stall). */
function collect(store: FileJournalStore, id: string, afterSeq: number) {
  const controller = new AbortController();
  const lines: JournalLine[] = [];
  const iterating = (async () => {
    for await (const batch of store.tail(id, { afterSeq, signal: controller.signal })) lines.push(...batch);
  })();
  return {
    lines,
    seqs: () => lines.map((line) => JSON.parse(line.text).seq as number),
    async until(test: () => boolean, what: string): Promise<void> {
      const deadline = Date.now() + 60_000;
      while (!test()) {
        if (Date.now() > deadline) throw new Error(`the tail never gave ${what}; it gave ${lines.length} lines`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async stop(): Promise<void> {
      controller.abort();
      await iterating;
    },
  };
}

const line = (seq: number, text: string) => JSON.stringify({ seq, type: 'session/title', atMs: 1000 + seq, data: { title: text } });

describe('the file store tail', { timeout: 120_000 }, () => {
  it('waits for a torn last line and gives it once complete; goes on after a torn tail is moved aside', async () => {
    const store = new FileJournalStore({ dataDir: join(home.dir, 'data') });
    const journal = await createJournal({ store, id: 'torn' });
    await journal.append('session/title', { title: 'one' });
    await journal.close();
    const path = store.pathOf('torn');
    const tail = collect(store, 'torn', 0);
    await tail.until(() => tail.lines.length === 1, 'seq 1');

    // Another writer's line, in two writes: the first half is not a line yet.
    const second = line(2, 'two, written in two pieces');
    appendFileSync(path, second.slice(0, 20));
    appendFileSync(path, `${second.slice(20)}\n${line(3, 'three')}\n`);
    await tail.until(() => tail.lines.length >= 3, 'seqs 2 and 3');
    expect(tail.lines.slice(1).map((l) => l.text)).toEqual([second, line(3, 'three')]);

    // A writer died mid-line; the next one moves the torn tail aside (opening repairs it) and appends.
    appendFileSync(path, line(4, 'torn, never finished').slice(0, 25));
    const reopened = await openJournal('torn', { store });
    await reopened.journal.append('session/title', { title: 'after the repair' });
    await reopened.journal.close();
    await tail.until(() => tail.seqs().includes(4), 'seq 4');
    await tail.stop();
    expect(tail.seqs()).toEqual([1, 2, 3, 4]);
    expect(JSON.parse(tail.lines[3]!.text).data.title).toBe('after the repair');

    // The tail gave exactly the journal's lines.
    const events: AnySessionEvent[] = [];
    for await (const event of readJournal(path)) events.push(event);
    expect(tail.lines.map((l) => JSON.parse(l.text))).toEqual(events);
    expect(readFileSync(path, 'utf8')).not.toContain('never finished');
  });
});
