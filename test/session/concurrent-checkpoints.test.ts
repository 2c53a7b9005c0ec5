/**
 * Checkpoints that overlap (the loop's, and a tool's through its session handle) each resolve only
 * once a sync that began after their lines were written is done (DESIGN "Durability": fsync at
 * checkpoints). Before the fix, a checkpoint that came while another's `lease.sync()` was in
 * flight found nothing unsynced and resolved at once — before the fsync covering its lines ended.
 */
import { describe, expect, it } from 'vitest';
import { initialState } from '../../runtime/session/fold.ts';
import type { JournalLease } from '../../runtime/session/store.ts';
import { StoreJournal } from '../../runtime/session/writer.ts';

/** A lease whose syncs finish only when the test says so; it logs writes and syncs. */
function gatedLease(log: string[]) {
  const syncs: (() => void)[] = [];
  const lease: JournalLease = {
    id: 's',
    location: 'memory:s',
    async write(firstSeq, lines) {
      log.push(`write ${firstSeq}..${firstSeq + lines.length - 1}`);
    },
    sync() {
      const index = syncs.length;
      log.push(`sync ${index} start`);
      return new Promise<void>((resolve) =>
        syncs.push(() => {
          log.push(`sync ${index} end`);
          resolve();
        }),
      );
    },
    async release() {},
  } as JournalLease;
  return { lease, endSync: (index: number) => syncs[index]!() };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('overlapping checkpoints', () => {
  it('a checkpoint during another’s sync waits for a sync that covers its own lines', async () => {
    const log: string[] = [];
    const { lease, endSync } = gatedLease(log);
    const journal = new StoreJournal({ lease, header: { type: 'session', version: 1, id: 's', createdAtMs: 0 }, state: initialState('s'), lastSeq: 0 });
    journal.append('turn/start', { turn: 1 });
    const first = journal.checkpoint().then(() => log.push('first resolved'));
    await tick();
    expect(log).toEqual(['write 1..1', 'sync 0 start']);
    journal.append('step/start', { turn: 1, step: 1 });
    const second = journal.checkpoint().then(() => log.push('second resolved'));
    const third = journal.checkpoint().then(() => log.push('third resolved'));
    await tick();
    // The second line is written while sync 0 runs; nobody may take sync 0 as its checkpoint.
    expect(log).toEqual(['write 1..1', 'sync 0 start', 'write 2..2']);
    endSync(0);
    await first; // its line was covered by sync 0
    await tick();
    expect(log).toHaveLength(6);
    expect(new Set(log.slice(3))).toEqual(new Set(['sync 0 end', 'first resolved', 'sync 1 start']));
    expect(log).not.toContain('second resolved');
    endSync(1);
    await Promise.all([second, third]);
    expect(log.slice(-3)).toEqual(['sync 1 end', 'second resolved', 'third resolved']);
    // Both waited for the one sync after their line: no sync per caller.
    expect(log.filter((line) => line.endsWith('start'))).toHaveLength(2);
  });
});
