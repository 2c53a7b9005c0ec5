/**
 * The crash test's writer: `node --import tsx crash-child.ts <dataDir> <sessionId> <checkpointFile>`.
 * Appends turn after turn (see crash-scenario.ts) until it is killed. After each checkpoint has
 * completed it records the journal's last seq in <checkpointFile> (a synchronous write), so the
 * parent knows which events were durable before the kill. Prints `ready` once the journal exists.
 */
import { openSync, writeSync } from 'node:fs';
import { createJournal } from '../../runtime/session/journal.ts';
import { turnOps } from './crash-scenario.ts';

const [dataDir, id, checkpointFile] = process.argv.slice(2);
const journal = await createJournal({ dataDir: dataDir!, id: id! });
const checkpoints = openSync(checkpointFile!, 'a');
process.stdout.write('ready\n');
for (let turn = 1; ; turn++) {
  for (const op of turnOps(turn)) {
    if (op.kind === 'append') {
      const appended = journal.append(op.type, op.data as never);
      if (appended instanceof Promise) await appended;
    } else if (op.kind === 'checkpoint') {
      await journal.checkpoint();
      writeSync(checkpoints, `${journal.lastSeq}\n`);
    } else {
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}
