/**
 * A journal with a line removed or lost has a hole: the plain read names it as such (not as a
 * corrupt line — the line it stops at is fine), and a salvage read reports the missing seqs to
 * `onGap` while it reads every event around them. Seqs of lines it skipped are said with the skip,
 * so they are not reported missing too.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readJournal, type AnySessionEvent, type SeqGap } from '../../runtime/index.ts';
import { createJournal } from '../../runtime/internal.ts';
import { tempDataDir } from './support.ts';

const data = tempDataDir();
afterAll(() => data.cleanup());

/** The header and lines of a journal of `count` events (turn/start, user/message … alternating turns). */
async function journalLines(id: string, count: number): Promise<{ path: string; header: string; events: string[] }> {
  const journal = await createJournal({ dataDir: data.dir, id });
  for (let turn = 1; journal.lastSeq < count; turn++) {
    journal.append('turn/start', { turn });
    if (journal.lastSeq < count) journal.append('turn/end', { turn, reason: 'completed' });
  }
  await journal.close();
  const [header, ...events] = readFileSync(journal.path, 'utf8').trimEnd().split('\n');
  return { path: journal.path, header: header!, events };
}

async function salvage(path: string, lines: readonly string[]): Promise<{ seqs: number[]; gaps: SeqGap[]; skipped: number[] }> {
  writeFileSync(path, `${lines.join('\n')}\n`);
  const gaps: SeqGap[] = [];
  const skipped: number[] = [];
  const events: AnySessionEvent[] = [];
  for await (const event of readJournal(path, { salvage: true, onGap: (gap) => gaps.push(gap), onSkip: (line) => skipped.push(line.lineNumber) })) events.push(event);
  return { seqs: events.map((event) => event.seq), gaps, skipped };
}

describe('a hole in a journal', () => {
  it('a plain read names the hole and the seqs missing', async () => {
    const { path, header, events } = await journalLines('hole-plain', 8);
    writeFileSync(path, `${[header, ...events.slice(0, 3), ...events.slice(6)].join('\n')}\n`);
    const read = async () => {
      for await (const _ of readJournal(path));
    };
    await expect(read()).rejects.toMatchObject({
      code: 'JOURNAL_CORRUPT',
      message: `${path}:5: the journal has a hole (seqs 4–6 are missing: this line holds seq 7 where 4 was expected; a line was removed or lost). The file was left as it is; a salvage read goes on past the hole.`,
    });
  });

  it('a salvage read reports the missing seqs and reads the events around them', async () => {
    const { path, header, events } = await journalLines('hole-salvage', 8);
    const holed = await salvage(path, [header, ...events.slice(0, 3), ...events.slice(4)]);
    expect(holed).toEqual({ seqs: [1, 2, 3, 5, 6, 7, 8], gaps: [{ lineNumber: 5, fromSeq: 4, toSeq: 4 }], skipped: [] });
  });

  it('a skipped line is not also a missing seq; a hole after it still is', async () => {
    const { path, header, events } = await journalLines('hole-skipped', 9);
    const cut = events[3]!.slice(0, 20); // seq 4: unreadable, lines after it
    // seq 4 skipped; 5 read; 6 and 7 missing; 8, 9 read.
    const result = await salvage(path, [header, ...events.slice(0, 3), cut, events[4]!, ...events.slice(7)]);
    expect(result).toEqual({ seqs: [1, 2, 3, 5, 8, 9], gaps: [{ lineNumber: 7, fromSeq: 6, toSeq: 7 }], skipped: [5] });
    // Unreadable seq 4 right before a hole of seq 5: only seq 5 is missing.
    const both = await salvage(path, [header, ...events.slice(0, 3), cut, ...events.slice(5)]);
    expect(both).toEqual({ seqs: [1, 2, 3, 6, 7, 8, 9], gaps: [{ lineNumber: 6, fromSeq: 5, toSeq: 5 }], skipped: [5] });
  });

  it('a line of the wrong shape holds its seq; a line whose seq goes back fills no hole', async () => {
    const { path, header, events } = await journalLines('hole-shape', 8);
    const wrongShape = events[3]!.replace(/"data":\{[^}]*\}/, '"data":{"turn":"one"}'); // seq 4, a turn that is not a number
    const shaped = await salvage(path, [header, ...events.slice(0, 3), wrongShape, ...events.slice(5)]);
    expect(shaped).toEqual({ seqs: [1, 2, 3, 6, 7, 8], gaps: [{ lineNumber: 6, fromSeq: 5, toSeq: 5 }], skipped: [5] });
    // seq 3 again where 4 belongs, then 5: seq 4 is missing.
    const back = await salvage(path, [header, ...events.slice(0, 3), events[2]!, ...events.slice(4)]);
    expect(back).toEqual({ seqs: [1, 2, 3, 5, 6, 7, 8], gaps: [{ lineNumber: 6, fromSeq: 4, toSeq: 4 }], skipped: [5] });
  });

  it('a whole journal has no hole', async () => {
    const { path, header, events } = await journalLines('hole-none', 6);
    expect(await salvage(path, [header, ...events])).toEqual({ seqs: [1, 2, 3, 4, 5, 6], gaps: [], skipped: [] });
  });
});
