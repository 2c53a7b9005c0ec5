/**
 * Creating a journal in the file store fsyncs the new file and its folder (DESIGN "Durability")
 * in the thread pool: in a served process other sessions' streams go on while the disk flushes,
 * where a synchronous fsync held the event loop for each session created (~0.6 ms here, far more
 * on a busy disk).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileJournalStore } from '../../runtime/index.ts';
import { tempDir } from '../cli/support.ts';

const home = tempDir('store-file-create');
afterAll(() => home.cleanup());

describe('FileJournalStore.create', () => {
  it('lets the event loop turn while it fsyncs, and returns a lease on the durable header', async () => {
    const store = new FileJournalStore({ dataDir: join(home.dir, 'data') });
    const header = JSON.stringify({ type: 'session', version: 1, id: 'turns' });
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    const lease = await store.create('turns', header);
    expect(turned).toBe(true);
    expect(readFileSync(store.pathOf('turns'), 'utf8')).toBe(`${header}\n`);
    await lease.release();
    // The lock went with the lease: the journal can be leased again.
    const again = await store.lease('turns');
    await again.release();
  });

  it('refuses an id already used, and leaves its file and lock as they were', async () => {
    const store = new FileJournalStore({ dataDir: join(home.dir, 'data') });
    const header = JSON.stringify({ type: 'session', version: 1, id: 'twice' });
    await (await store.create('twice', header)).release();
    await expect(store.create('twice', header)).rejects.toMatchObject({ code: 'JOURNAL_EXISTS' });
    expect(readFileSync(store.pathOf('twice'), 'utf8')).toBe(`${header}\n`);
    await (await store.lease('twice')).release();
  });
});
