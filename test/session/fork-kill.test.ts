/**
 * Fork atomicity (issue #16, item 4): `harness fork` killed mid-copy (SIGTERM and SIGKILL) leaves
 * either no fork or a complete one under the fork's name — never a truncated journal that
 * `replay --verify` calls ok and `--resume` would continue. A truncated fork left by an older
 * build (written in place) is refused by every reader: `--verify`, `openJournal` (what `--resume`
 * does), `openSession`, `readJournal`, and `sessions` lists it with its error.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forkSession, HarnessError, listSessions, openSession, readJournal } from '../../runtime/index.ts';
import { openJournal } from '../../runtime/internal.ts';
import { bin, cleanEnv, harness } from '../cli/support.ts';
import { expectedEvents } from './crash-scenario.ts';
import { tempDataDir } from './support.ts';

const TURNS = 100; // ≈ 60,000 events, ~14 MB: a copy that takes long enough to be cut
let data: ReturnType<typeof tempDataDir>;
let sessions: string;
let lastSeq = 0;

beforeAll(() => {
  data = tempDataDir('fork-kill');
  sessions = join(data.dir, 'sessions');
  const events = expectedEvents(TURNS);
  const lines = [JSON.stringify({ type: 'session', version: 1, id: 'source', createdAtMs: 1 })];
  for (const [index, event] of events.entries()) lines.push(JSON.stringify({ seq: index + 1, type: event.type, atMs: 1000 + index, data: event.data }));
  lastSeq = events.length;
  mkdirSync(sessions, { recursive: true });
  writeFileSync(join(sessions, 'source.jsonl'), `${lines.join('\n')}\n`);
});
afterAll(() => data.cleanup());

/** Starts `harness fork source --at <lastSeq> --id <id>`, kills it with `signal` `delayMs` after a file of the fork appears. */
function forkAndKill(id: string, signal: 'SIGTERM' | 'SIGKILL', delayMs: number): Promise<{ killed: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'fork', 'source', '--at', String(lastSeq), '--id', id], { env: cleanEnv({ HARNESS_HOME: data.dir }), stdio: 'ignore' });
    let sent = false;
    const poll = setInterval(() => {
      if (sent) return;
      if (readdirSync(sessions).some((name) => name.startsWith(`${id}.jsonl`) && !name.endsWith('.lock'))) {
        sent = true;
        clearInterval(poll);
        setTimeout(() => child.kill(signal), delayMs);
      }
    }, 2);
    child.on('error', reject);
    child.on('exit', (_code, got) => {
      clearInterval(poll);
      resolve({ killed: got === signal || (signal === 'SIGTERM' && _code === 143) });
    });
  });
}

/** What a reader makes of a fork: complete (every event up to parent.seq), or refused with a code. */
async function judge(id: string): Promise<'absent' | 'complete' | string> {
  const path = join(sessions, `${id}.jsonl`);
  if (!existsSync(path)) return 'absent';
  try {
    const { journal } = await openJournal(path);
    const seq = journal.lastSeq;
    await journal.close();
    return seq >= lastSeq ? 'complete' : `truncated but opened (${seq} of ${lastSeq})`;
  } catch (error) {
    if (HarnessError.is(error)) return `refused ${error.code}`;
    throw error;
  }
}

describe('a fork killed mid-copy', () => {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`with ${signal} is absent or complete, never truncated under its name`, async () => {
      const outcomes: string[] = [];
      let killedCount = 0;
      for (let run = 0; run < 4; run++) {
        const id = `fork-${signal.toLowerCase()}-${run}`;
        const { killed } = await forkAndKill(id, signal, run * 15);
        if (killed) killedCount++;
        outcomes.push(await judge(id));
      }
      expect(killedCount, 'kills that landed before the fork finished').toBeGreaterThan(0);
      for (const outcome of outcomes) expect(['absent', 'complete']).toContain(outcome);
      // Nothing half-written is listed as a session.
      for (const summary of await listSessions(data.dir)) if (summary.id.startsWith(`fork-${signal.toLowerCase()}`)) expect(summary.error).toBeUndefined();
      // What SIGTERM (process.exit) left behind is cleaned up; a SIGKILL may leave an unlisted .partial file.
      if (signal === 'SIGTERM') expect(readdirSync(sessions).filter((name) => name.includes('.partial-'))).toEqual([]);
    }, 120_000);
  }
});

describe('a truncated fork (written in place by an older build)', () => {
  let path: string;
  beforeAll(() => {
    const source = readFileSync(join(sessions, 'source.jsonl'), 'utf8').split('\n');
    // The header promises 1,200 events; the copy was cut after 700 (at a turn boundary or not).
    const header = JSON.stringify({ type: 'session', version: 1, id: 'cut', createdAtMs: 2, parent: { sessionId: 'source', seq: 1200 } });
    path = join(sessions, 'cut.jsonl');
    writeFileSync(path, `${[header, ...source.slice(1, 701)].join('\n')}\n`);
  });

  it('is refused by openJournal (what --resume does) with JOURNAL_CORRUPT naming the file and the missing seqs', async () => {
    const error = await openJournal(path).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(HarnessError.is(error) && error.code).toBe('JOURNAL_CORRUPT');
    expect((error as Error).message).toContain(path);
    expect((error as Error).message).toMatch(/truncated fork.*seq 1200.*seq 700/);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('is refused by openSession and readJournal, and listed by sessions with its error', async () => {
    await expect(openSession(path)).rejects.toMatchObject({ code: 'JOURNAL_CORRUPT' });
    const read = async (): Promise<void> => {
      for await (const _ of readJournal(path));
    };
    await expect(read()).rejects.toMatchObject({ code: 'JOURNAL_CORRUPT' });
    const listed = (await listSessions(data.dir)).find((s) => s.id === 'cut');
    expect(listed?.error?.code).toBe('JOURNAL_CORRUPT');
  });

  it('fails `harness replay --verify` (exit 1) naming the truncation', async () => {
    const result = await harness(['replay', 'cut', '--verify'], { home: data.dir });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/damaged/);
    expect(result.stdout).toMatch(/JOURNAL_CORRUPT.*truncated fork/);
  }, 60_000);
});

describe('a .partial-<pid> file a killed fork left behind', () => {
  /** The pid of a process that has exited. */
  const deadPid = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
      child.on('error', reject);
      child.on('exit', () => resolve(child.pid!));
    });

  it('is never a journal: not listed, refused by name by every reader; the next fork removes it once its writer is dead', async () => {
    const source = readFileSync(join(sessions, 'source.jsonl'), 'utf8').split('\n');
    const body = `${[JSON.stringify({ type: 'session', version: 1, id: 'leftover', createdAtMs: 3, parent: { sessionId: 'source', seq: 50 } }), ...source.slice(1, 51)].join('\n')}\n`;
    const dead = join(sessions, `leftover.jsonl.partial-${await deadPid()}`);
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    const live = join(sessions, `busy.jsonl.partial-${sleeper.pid}`);
    try {
      writeFileSync(dead, body);
      writeFileSync(live, body);
      expect((await listSessions(data.dir)).map((s) => s.id).filter((id) => id.includes('leftover') || id.includes('busy'))).toEqual([]);
      await expect(openJournal(dead)).rejects.toMatchObject({ code: 'NOT_A_JOURNAL_FILE', message: expect.stringContaining('unfinished copy of a fork or import') });
      await expect(openSession(dead)).rejects.toMatchObject({ code: 'NOT_A_JOURNAL_FILE' });
      const read = async (): Promise<void> => {
        for await (const _ of readJournal(dead));
      };
      await expect(read()).rejects.toMatchObject({ code: 'NOT_A_JOURNAL_FILE' });

      const seq = source.slice(1).findIndex((line) => line.includes('"type":"turn/end"')) + 1; // a turn boundary
      const { journal } = await forkSession('source', { dataDir: data.dir, atSeq: seq, id: 'after-leftover' });
      await journal.close();
      expect(existsSync(dead), 'the dead writer’s partial is removed').toBe(false);
      expect(existsSync(live), 'a live writer’s partial is left alone').toBe(true);
      expect(readdirSync(sessions).filter((name) => name.startsWith('after-leftover'))).toEqual(['after-leftover.jsonl']);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });
});
