/**
 * The writer lock under a stale-lock takeover race (issue #16, item 1): a crashed writer left its
 * lock; three warm processes try to take it at the same moment, 150 times. Exactly one may win
 * each trial — two winners are two writers of one journal.
 */
import { createHash } from 'node:crypto';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireLock, releaseLock } from '../../runtime/session/lock.ts';
import { sessionTestDir, tempDataDir } from './support.ts';

const TRIALS = 150;
const CONTENDERS = 3;

interface Contender {
  readonly child: ChildProcessWithoutNullStreams;
  next(): Promise<string>;
  send(line: string): void;
}

function startContender(): Contender {
  const child = spawn(process.execPath, ['--import', 'tsx', join(sessionTestDir, 'lock-child.ts')], { stdio: ['pipe', 'pipe', 'pipe'] });
  const queue: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const waiter = waiting.shift();
    if (waiter) waiter(line);
    else queue.push(line);
  });
  return {
    child,
    next: () => (queue.length > 0 ? Promise.resolve(queue.shift()!) : new Promise((resolve) => waiting.push(resolve))),
    send: (line) => child.stdin.write(`${line}\n`),
  };
}

/** A pid that is certainly dead: a process that ran and was reaped. */
function deadPid(): number {
  const result = spawnSync('true');
  return result.pid!;
}

let data: ReturnType<typeof tempDataDir>;
let contenders: Contender[] = [];
beforeAll(async () => {
  data = tempDataDir('lock');
  contenders = Array.from({ length: CONTENDERS }, startContender);
  for (const contender of contenders) expect(await contender.next()).toBe('ready');
}, 60_000);
afterAll(() => {
  for (const contender of contenders) contender.child.kill();
  data.cleanup();
});

describe('stale-lock takeover', () => {
  it(`by ${CONTENDERS} processes at once yields exactly one writer, ${TRIALS} times out of ${TRIALS}`, async () => {
    const failures: string[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const lockPath = join(data.dir, `t${trial}.jsonl.lock`);
      // Both lock formats a dead writer can leave: "<pid>\n" (older builds) and "<pid> <token>\n".
      writeFileSync(lockPath, trial % 2 === 0 ? `${deadPid()}\n` : `${deadPid()} stale${trial}\n`);
      for (const contender of contenders) contender.send(`take ${lockPath}`);
      const answers = await Promise.all(contenders.map((c) => c.next()));
      const winners = answers.filter((a) => a === 'won').length;
      if (winners !== 1 || answers.some((a) => a.startsWith('error'))) failures.push(`trial ${trial}: ${answers.join(', ')}`);
      for (const contender of contenders) contender.send(`release ${lockPath}`);
      await Promise.all(contenders.map((c) => c.next()));
      expect(existsSync(lockPath), `trial ${trial}: the lock is gone after its writer released it`).toBe(false);
    }
    expect(failures).toEqual([]);
    // No claim or temporary file is left behind.
    expect(readdirSync(data.dir)).toEqual([]);
  }, 120_000);

  it('refuses a live holder and takes over a dead one (reporting its pid)', () => {
    const lockPath = join(data.dir, 'single.jsonl.lock');
    writeFileSync(lockPath, `${process.ppid}\n`);
    expect(() => acquireLock(lockPath, 'single.jsonl')).toThrow(expect.objectContaining({ code: 'JOURNAL_LOCKED' }));
    const pid = deadPid();
    writeFileSync(lockPath, `${pid}\n`);
    expect(acquireLock(lockPath, 'single.jsonl')).toEqual({ staleTakenOver: { pid } });
    releaseLock(lockPath);
    expect(existsSync(lockPath)).toBe(false);
  });

  it('takes over a stale lock whose takeover claimer died too', () => {
    const lockPath = join(data.dir, 'claimed.jsonl.lock');
    const stale = `${deadPid()}\n`;
    writeFileSync(lockPath, stale);
    const claim = `${lockPath}.takeover-${createHash('sha256').update(stale).digest('hex').slice(0, 16)}`;
    writeFileSync(claim, `${deadPid()} dead-claimer\n`);
    expect(acquireLock(lockPath, 'claimed.jsonl').staleTakenOver).toBeDefined();
    expect(existsSync(claim)).toBe(false);
    releaseLock(lockPath);
    expect(readdirSync(data.dir)).toEqual([]);
  });
});
