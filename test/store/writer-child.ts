/**
 * A writer to kill: `node --import tsx writer-child.ts <store spec> <sessionId>`. Creates the
 * session, appends a turn that is mid-stream (a started tool call, then chunks of a reply),
 * checkpoints, prints `ready <lastSeq>` and waits to be killed, holding its lease (the lock file,
 * or the database connection with the advisory lock).
 */
import { createUserMessage } from '../../runtime/index.ts';
import { createJournal } from '../../runtime/internal.ts';
import { openStore } from './stores.ts';

const [spec, id] = process.argv.slice(2);
const store = await openStore(spec!);
const journal = await createJournal({ store, id: id!, now: () => 1_000 });
const ops: [string, unknown][] = [
  ['turn/start', { turn: 1 }],
  ['user/message', { turn: 1, message: createUserMessage('hello') }],
  ['step/start', { turn: 1, step: 1 }],
  ['assistant/chunk', { turn: 1, step: 1, chunk: { type: 'block-start', index: 0, blockType: 'text' } }],
  ['assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'Hal' } }],
  ['assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'f a reply' } }],
];
for (const [type, data] of ops) await journal.append(type as never, data as never);
await journal.checkpoint();
process.stdout.write(`ready ${journal.lastSeq}\n`);
setInterval(() => undefined, 1_000);
