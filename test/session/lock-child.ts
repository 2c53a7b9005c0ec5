/**
 * A lock contender for lock.test.ts: `node --import tsx lock-child.ts`. Reads commands from stdin,
 * one per line — `take <lockPath>` (answers `won`, `locked` or `error <code>`) and
 * `release <lockPath>` (answers `released`) — so a trial races three warm processes at once.
 */
import { createInterface } from 'node:readline';
import { acquireLock, releaseLock } from '../../runtime/session/lock.ts';

const lines = createInterface({ input: process.stdin });
process.stdout.write('ready\n');
for await (const line of lines) {
  const [command, path] = line.split(' ') as [string, string];
  if (command === 'take') {
    try {
      acquireLock(path, path.replace(/\.lock$/, ''));
      process.stdout.write('won\n');
    } catch (error) {
      const code = (error as { code?: string }).code;
      process.stdout.write(code === 'JOURNAL_LOCKED' ? 'locked\n' : `error ${code ?? String(error)}\n`);
    }
  } else if (command === 'release') {
    releaseLock(path);
    process.stdout.write('released\n');
  }
}
