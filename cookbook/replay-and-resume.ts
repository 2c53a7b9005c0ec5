/**
 * Cookbook: replaying and resuming a session — read, fold, state at a seq, fork, resume.
 * Run: npx tsx cookbook/replay-and-resume.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, forkSession, openSession, readJournal, stateAt, type AnySessionEvent, type HarnessConfig } from '../runtime/index.ts';

const config: HarnessConfig = {
  defaults: { provider: 'scripted', model: 'scripted-default' },
  plugins: [{ module: '../plugins/llm-scripted/index.ts' }, { module: '../plugins/tools-workspace/index.ts' }, { module: '../plugins/approvals/index.ts' }],
};
const baseDir = fileURLToPath(new URL('.', import.meta.url));
const workspace = fileURLToPath(new URL('demo-workspace', import.meta.url));

export async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-'));
  try {
    // 1. Record: one turn, then the process could end — the journal is all there is.
    let harness = await createHarness({ config, baseDir, dataDir });
    const first = await harness.createSession({ cwd: workspace });
    await first.runToEnd('What is in this workspace?', { approve: harness.ctx.approvals!.create('read-only') });
    const id = first.id;
    await harness.dispose();

    // 2. Read: events stream from the file; the state is a fold, at any seq.
    const events: AnySessionEvent[] = [];
    for await (const event of readJournal(join(dataDir, 'sessions', `${id}.jsonl`))) events.push(event);
    const firstResult = events.find((e) => e.type === 'tool/result')!;
    const early = stateAt(events, firstResult.seq);
    const opened = await openSession(id, { dataDir }); // read-only: no lock, no repair
    const turnEnd = events.find((e) => e.type === 'turn/end')!;

    // 3. Fork: a new session seeded with a prefix (here: the whole first turn).
    const { journal: fork } = await forkSession(id, { atSeq: turnEnd.seq, dataDir });
    const forkId = fork.id;
    await fork.close();

    // 4. Resume the fork: a new harness, the same journal, a new turn.
    harness = await createHarness({ config, baseDir, dataDir });
    const { session } = await harness.openSession(forkId);
    const end = await session.runToEnd('And what does the README say?', { approve: harness.ctx.approvals!.create('read-only') });
    const resumed = await openSession(forkId, { dataDir, events: true });
    await harness.dispose();
    return {
      eventCount: events.length,
      messagesAfterFirstToolResult: early.messages.length,
      finalMessages: opened.state.messages.length,
      usage: opened.state.usage,
      forkParent: resumed.header.parent,
      resumedTurnEnd: end.data.reason,
      resumedTurns: resumed.state.turnCount,
      headerReasons: resumed.events!.filter((e) => e.type === 'request/header').map((e) => (e.data as { reason: string }).reason),
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
