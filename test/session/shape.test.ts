/**
 * Wrong-shape lines (issue #16, item 6): a well-formed line whose data has the wrong shape makes
 * every reader fail with a coded error naming the file and the line — `JOURNAL_CORRUPT` — instead
 * of an uncoded `TypeError`: replay (openSession), --verify, --resume (openJournal) and readJournal;
 * --salvage skips the line and reads the rest.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HarnessError, openSession, readJournal } from '../../runtime/index.ts';
import { openJournal } from '../../runtime/internal.ts';
import { harness } from '../cli/support.ts';
import { expectedEvents } from './crash-scenario.ts';
import { tempDataDir } from './support.ts';

/** [event type to damage, the data put in its place]. */
const WRONG: readonly [string, unknown][] = [
  ['turn/start', null],
  ['turn/start', { turn: 'one' }],
  ['turn/start', []],
  ['turn/start', 7],
  ['user/message', { turn: 1 }],
  ['user/message', { turn: 1, message: null }],
  ['user/message', { turn: 1, message: { role: 'user', content: 'hi' } }],
  ['user/message', { turn: 1, message: { role: 'user', content: [null] } }],
  ['step/start', { turn: 1 }],
  ['step/start', { turn: 1, step: '1' }],
  ['assistant/chunk', { turn: 1, step: 1, chunk: null }],
  ['assistant/chunk', { turn: 1, step: 1 }],
  ['assistant/chunk', { turn: 1, step: 1, chunk: { text: 'no type' } }],
  ['assistant/message', { turn: 1, step: 1, message: null, finish: { kind: 'stop' } }],
  ['assistant/message', { turn: 1, step: 1, message: { role: 'assistant', content: [] }, finish: null }],
  ['tool/call', { turn: 1, step: 1, callId: 5, name: 'exec', arguments: '{}' }],
  ['tool/call', { turn: 1, step: 1, callId: 'c', name: 'exec', arguments: {} }],
  ['tool/result', { turn: 1, step: 1, callId: 'c', message: 'done' }],
  ['step/end', 'end'],
  ['turn/end', { turn: 1, reason: 3 }],
];

let data: ReturnType<typeof tempDataDir>;
const cases: { path: string; line: number; type: string }[] = [];
beforeAll(() => {
  data = tempDataDir('shape');
  const dir = join(data.dir, 'sessions');
  mkdirSync(dir, { recursive: true });
  const events = expectedEvents(2);
  WRONG.forEach(([type, wrong], index) => {
    const id = `shape-${index}`;
    // The first event of that type in the second turn (so lines follow it, and the file is not torn).
    const firstOfTurn2 = events.findIndex((e) => e.type === 'turn/start' && (e.data as { turn: number }).turn === 2);
    const at = events.findIndex((e, i) => i >= firstOfTurn2 && e.type === type);
    expect(at, type).toBeGreaterThan(0);
    const lines = [JSON.stringify({ type: 'session', version: 1, id, createdAtMs: 1 })];
    for (const [i, event] of events.entries()) lines.push(JSON.stringify({ seq: i + 1, type: event.type, atMs: 1000 + i, data: i === at ? wrong : event.data }));
    const path = join(dir, `${id}.jsonl`);
    writeFileSync(path, `${lines.join('\n')}\n`);
    cases.push({ path, line: at + 2, type });
  });
});
afterAll(() => data.cleanup());

async function codeOf(run: () => Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await run();
  } catch (error) {
    return { code: HarnessError.is(error) ? error.code : `uncoded ${(error as Error).name}`, message: (error as Error).message };
  }
  return { code: 'none', message: '' };
}

describe('20 wrong-shape lines', () => {
  it('each give JOURNAL_CORRUPT naming the file and line in replay (openSession), --resume (openJournal) and readJournal', async () => {
    expect(cases).toHaveLength(20);
    for (const { path, line, type } of cases) {
      const where = `${path}:${line}:`;
      for (const [reader, run] of [
        ['openSession', () => openSession(path)],
        ['openJournal', () => openJournal(path)],
        [
          'readJournal',
          async () => {
            for await (const _ of readJournal(path));
          },
        ],
      ] as const) {
        const { code, message } = await codeOf(run);
        expect(code, `${reader} on a wrong ${type} (line ${line})`).toBe('JOURNAL_CORRUPT');
        expect(message, `${reader} on a wrong ${type}`).toContain(where);
      }
    }
  });

  it('--salvage skips the line and reads the rest, reporting it', async () => {
    for (const { path, line } of cases) {
      const opened = await openSession(path, { salvage: true });
      expect(opened.skipped.map((s) => s.lineNumber)).toContain(line);
    }
  });

  it('`harness replay --verify` reports them (exit 1), `replay` and `--resume` fail coded', async () => {
    for (const { path, line } of cases.slice(0, 1)) {
      const verify = await harness(['replay', path, '--verify'], { home: data.dir });
      expect(verify.code).toBe(1);
      expect(verify.stdout).toContain(`JOURNAL_CORRUPT`);
      expect(verify.stdout).toContain(`:${line}:`);
    }
    const replay = await harness(['replay', cases[0]!.path], { home: data.dir });
    expect(replay.code).toBe(1);
    expect(replay.stderr).toMatch(/^error JOURNAL_CORRUPT: .*:\d+: corrupt journal line/m);
    const resume = await harness(['run', '--resume', cases[1]!.path, 'go on'], { home: data.dir });
    expect(resume.code).toBe(1);
    expect(resume.stderr).toMatch(/error JOURNAL_CORRUPT: /);
    const salvage = await harness(['replay', cases[2]!.path, '--salvage'], { home: data.dir });
    expect(salvage.stderr).not.toMatch(/TypeError|Cannot (read|destructure)/);
  }, 120_000);
});
