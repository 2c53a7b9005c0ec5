/**
 * The store contract, run unchanged against the JSONL file store and the PostgreSQL store (a real
 * server: test/support/postgres.ts): append in batches and checkpoint, one writer,
 * repair after the writer is killed, live tail, fork, cassette (recorded calls), and the export
 * round trip (byte-equal, across stores).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUserMessage, exportSession, forkSession, HarnessError, importJournal, readJournal, recordedCalls, storeSource, type AnySessionEvent, type JournalStore } from '../../runtime/index.ts';
import { createJournal, openJournal } from '../../runtime/internal.ts';
import { projectRoot } from '../session/support.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';
import { openStore } from './stores.ts';

let server: TestPostgres;
const scratch = mkdtempSync(join(projectRoot, 'test', '.tmp-store-'));
const specs: Record<string, string> = {};
const stores: Record<string, JournalStore> = {};

beforeAll(async () => {
  server = await startPostgres();
  specs.file = `file:${join(scratch, 'data')}`;
  specs.postgres = await server.createDatabase('contract');
  for (const [kind, spec] of Object.entries(specs)) stores[kind] = await openStore(spec);
}, 60_000);

afterAll(async () => {
  for (const store of Object.values(stores)) await store.close();
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** A finished turn with a tool call, its chunks and its result: ~14 events. */
async function writeTurn(journal: { append(type: never, data: never): unknown }, turn: number): Promise<void> {
  const ops: [string, unknown][] = [
    ['turn/start', { turn }],
    ['user/message', { turn, message: createUserMessage(`question ${turn}`) }],
    ['step/start', { turn, step: 1 }],
    ['assistant/chunk', { turn, step: 1, chunk: { type: 'block-start', index: 0, blockType: 'text' } }],
    ['assistant/chunk', { turn, step: 1, chunk: { type: 'text-delta', index: 0, text: `answer ${turn} "quoted" \u2028 ü` } }],
    ['assistant/chunk', { turn, step: 1, chunk: { type: 'block-end', index: 0, block: { type: 'text', text: `answer ${turn} "quoted" \u2028 ü` } } }],
    ['assistant/chunk', { turn, step: 1, chunk: { type: 'finish', finish: { kind: 'stop' } } }],
    ['step/end', { turn, step: 1 }],
    ['turn/end', { turn, reason: 'completed' }],
  ];
  for (const [type, data] of ops) await journal.append(type as never, data as never);
}

async function exported(store: JournalStore, id: string): Promise<string> {
  let text = '';
  await exportSession(store, id, (chunk) => void (text += chunk));
  return text;
}

async function events(store: JournalStore, id: string): Promise<AnySessionEvent[]> {
  const out: AnySessionEvent[] = [];
  for await (const event of readJournal(storeSource(store, id))) out.push(event);
  return out;
}

describe.each(['file', 'postgres'])('the %s store', (kind) => {
  const store = (): JournalStore => stores[kind]!;

  it('appends in batches, checkpoints, and reads back the exact lines the file store writes', async () => {
    const journal = await createJournal({ store: store(), id: 'append', now: () => 42 });
    for (let turn = 1; turn <= 3; turn++) await writeTurn(journal, turn);
    await journal.checkpoint();
    const lines = (await exported(store(), 'append')).split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines).toHaveLength(1 + journal.lastSeq + 1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ type: 'session', version: 1, id: 'append' });
    expect(lines[5]).toBe('{"seq":5,"type":"assistant/chunk","atMs":42,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"answer 1 \\"quoted\\" \u2028 ü"}}}');
    await journal.close();
    const read = await events(store(), 'append');
    expect(read.map((e) => e.seq)).toEqual(Array.from({ length: 27 }, (_, i) => i + 1));
    // A range read.
    const range: number[] = [];
    for await (const batch of store().read('append', { fromSeq: 10, toSeq: 12 })) for (const line of batch) range.push(line.lineNumber);
    expect(range).toEqual([1, 11, 12, 13]);
  });

  it('gives one writer per session: a second one gets JOURNAL_LOCKED until the first closes', async () => {
    const journal = await createJournal({ store: store(), id: 'locked' });
    await writeTurn(journal, 1);
    await journal.checkpoint();
    const second = await openJournal('locked', { store: store() }).catch((error) => error);
    expect(HarnessError.is(second) && second.code).toBe('JOURNAL_LOCKED');
    const twice = await createJournal({ store: store(), id: 'locked' }).catch((error) => error);
    expect(HarnessError.is(twice) && ['JOURNAL_LOCKED', 'JOURNAL_EXISTS'].includes(twice.code)).toBe(true);
    await journal.close();
    const { journal: reopened, repairs } = await openJournal('locked', { store: store() });
    expect(repairs.syntheticEvents).toEqual([]);
    expect(reopened.lastSeq).toBe(9);
    await reopened.close();
    const missing = await openJournal('nobody', { store: store() }).catch((error) => error);
    expect(HarnessError.is(missing) && missing.code).toBe('JOURNAL_NOT_FOUND');
  });

  it('repairs the open turn of a writer killed while holding the lease, as the file store does', async () => {
    const id = `killed-${kind}`;
    const child = spawn(process.execPath, ['--import', 'tsx', join(projectRoot, 'test/store/writer-child.ts'), specs[kind]!, id], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const ready = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(out.trim());
      });
      child.once('exit', (code) => reject(new Error(`writer exited ${code}: ${err}`)));
    });
    expect(ready).toBe('ready 6');
    // While it lives, it holds the lease.
    const blocked = await openJournal(id, { store: store() }).catch((error) => error);
    expect(HarnessError.is(blocked) && blocked.code).toBe('JOURNAL_LOCKED');
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    // The database notices the dead connection at once; allow it a moment under load.
    let opened: Awaited<ReturnType<typeof openJournal>> | undefined;
    for (let attempt = 0; opened === undefined; attempt++) {
      try {
        opened = await openJournal(id, { store: store() });
      } catch (error) {
        if (!(HarnessError.is(error) && error.code === 'JOURNAL_LOCKED') || attempt > 50) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const synthetic = opened.repairs.syntheticEvents;
    expect(synthetic.map((e) => e.type)).toEqual(['assistant/message', 'step/end', 'turn/end']);
    expect(synthetic[0]!.data).toMatchObject({ interrupted: true, message: { content: [{ type: 'text', text: 'Half a reply' }] } });
    expect(synthetic[2]!.data).toMatchObject({ turn: 1, reason: 'interrupted' });
    expect(opened.journal.state.openTurn).toBeUndefined();
    await writeTurn(opened.journal, 2);
    await opened.journal.close();
    const all = await events(store(), id);
    expect(all.map((e) => e.seq)).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
    expect(all).toHaveLength(6 + 3 + 9);
  });

  it('tails live: every event after a seq exactly once, in order, as batches are written', async () => {
    const journal = await createJournal({ store: store(), id: 'tail' });
    await writeTurn(journal, 1);
    await journal.checkpoint();
    const controller = new AbortController();
    const seen: number[] = [];
    const done = (async () => {
      for await (const batch of store().tail('tail', { afterSeq: 4, signal: controller.signal })) {
        for (const line of batch) seen.push(JSON.parse(line.text).seq);
        if (seen.at(-1) === 36) controller.abort();
      }
    })();
    for (let turn = 2; turn <= 4; turn++) {
      await writeTurn(journal, turn);
      await journal.checkpoint();
      await new Promise((r) => setTimeout(r, 20));
    }
    await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`tail stalled at ${seen.at(-1)}`)), 15_000))]);
    expect(seen).toEqual(Array.from({ length: 32 }, (_, i) => i + 5));
    await journal.close();
  });

  it('forks a prefix verbatim and lists the sessions', async () => {
    const { journal: fork } = await forkSession('append', { store: store(), atSeq: 9, id: 'fork' });
    await fork.close();
    const source = (await exported(store(), 'append')).split('\n');
    const forked = (await exported(store(), 'fork')).split('\n');
    expect(forked.slice(1, 10)).toEqual(source.slice(1, 10));
    expect(JSON.parse(forked[0]!)).toMatchObject({ id: 'fork', parent: { sessionId: 'append', seq: 9 } });
    const inside = await forkSession('append', { store: store(), atSeq: 5, id: 'fork-inside' }).catch((error) => error);
    expect(HarnessError.is(inside) && inside.code).toBe('FORK_INSIDE_TURN');
    const listed = await store().list();
    const append = listed.find((s) => s.id === 'append');
    expect(append).toMatchObject({ turnCount: 3, eventCount: 27, lastUpdateAtMs: 42 });
    expect(listed.find((s) => s.id === 'fork')).toMatchObject({ turnCount: 1, eventCount: 9, parent: { sessionId: 'append', seq: 9 } });
  });

  it('serves a session as a cassette: its recorded calls, chunk for chunk', async () => {
    const calls = recordedCalls(await events(store(), 'append'));
    expect(calls).toHaveLength(3);
    expect(calls.map((call) => call.chunks.length)).toEqual([4, 4, 4]);
    expect(calls[1]!.finish).toEqual({ kind: 'stop' });
  });

  it('exports and imports across stores, byte-equal on the round trip', async () => {
    const other = kind === 'file' ? 'postgres' : 'file';
    const text = await exported(store(), `killed-${kind}`);
    const file = join(scratch, `export-${kind}.jsonl`);
    writeFileSync(file, text);
    await importJournal(file, { store: stores[other]! }).catch(async (error) => {
      // the other store may already hold a session of this id from its own run of this file
      if (!(HarnessError.is(error) && error.code === 'JOURNAL_EXISTS')) throw error;
    });
    const renamed = join(scratch, `export-${kind}-copy.jsonl`);
    const header = JSON.parse(text.slice(0, text.indexOf('\n')));
    writeFileSync(renamed, `${JSON.stringify({ ...header, id: `copy-of-${kind}` })}${text.slice(text.indexOf('\n'))}`);
    await importJournal(renamed, { store: stores[other]! });
    const back = await exported(stores[other]!, `copy-of-${kind}`);
    expect(back).toBe(readFileSync(renamed, 'utf8'));
    const twice = await importJournal(renamed, { store: stores[other]! }).catch((error) => error);
    expect(HarnessError.is(twice) && twice.code).toBe('JOURNAL_EXISTS');
  });
});

describe('the postgres store schema', () => {
  it('refuses a database migrated by a newer Harness (STORE_SCHEMA_TOO_NEW), and changes nothing', async () => {
    const url = await server.createDatabase('newer');
    const first = await openStore(url);
    await first.close();
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    await client.connect();
    await client.query('UPDATE harness_schema SET version = 99');
    const refused = await openStore(url).catch((error) => error);
    expect(HarnessError.is(refused) && refused.code).toBe('STORE_SCHEMA_TOO_NEW');
    expect(refused.failure).toMatchObject({ version: 99, supported: 1 });
    expect((await client.query('SELECT version FROM harness_schema')).rows).toEqual([{ version: 99 }]);
    await client.end();
  });
});
