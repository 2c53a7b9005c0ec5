/**
 * Memory benchmark (issue #9, 4), `npm run bench -- memory`:
 *
 * 1. A 2,000-turn scripted session: one session, `session.run` 2,000 times (llm-scripted, no pace,
 *    ~30 chunks per call), in a fresh child process with `--expose-gc`. After 20 turns (the
 *    baseline) and at checkpoints up to 2,000: RSS, and heap used after a full GC. Reported: the
 *    ratio of each at 2,000 turns to its value at 20 turns, the growth per turn, and the surface's
 *    own size per turn (its messages as JSON) — so that anything growing per turn beyond the
 *    surface (retained events, per-call caches) stands out. Heap snapshots are not taken; the
 *    figure to watch is "heap growth per turn / surface JSON bytes per turn".
 * 2. The journal's bytes per streamed chunk: the two benchmark recordings (OpenAI Chat tool calls,
 *    Anthropic thinking) through the Harness path (bench/stream/contenders.ts) against the loopback
 *    fixture server: the `assistant/chunk` records' bytes per chunk, the whole file per provider SSE
 *    event, and the ratio of the journal file to the provider's SSE bytes for the same stream.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHarness } from '../runtime/harness.ts';
import { projectRoot, startFixtureServer } from '../test/support/fixture-server.ts';
import { answer, check, collectGarbage, envInt, inChild, isMain, printResult, round, type BenchResult, type Row } from './support.ts';
import { harnessRig, type Served } from './stream/contenders.ts';
import { countEvents, repeatedBody, STREAMS, type StreamName } from './stream/server.ts';

const TURNS = envInt('BENCH_MEMORY_TURNS', 2_000);
const BASELINE_TURNS = 20;

const SCRIPT = {
  replies: [
    {
      reply: {
        reasoning: 'A short status answer will do; mention the build and the tests.',
        text: 'The build is green and all tests pass. Nothing else needs your attention right now.',
      },
    },
  ],
};

interface Point {
  readonly turns: number;
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
  readonly surfaceMessages: number;
  readonly surfaceJsonKiB: number;
  readonly journalKiB: number;
  readonly chunks: number;
  readonly events: number;
}

interface SessionReport {
  readonly points: Point[];
  readonly wallS: number;
}

const MiB = 2 ** 20;

async function sessionChild(): Promise<SessionReport> {
  const dir = mkdtempSync(join(tmpdir(), 'harness-bench-memory-'));
  const scriptPath = join(dir, 'script.json');
  writeFileSync(scriptPath, JSON.stringify(SCRIPT));
  const harness = await createHarness({
    dataDir: join(dir, 'data'),
    config: {
      defaults: { provider: 'scripted', model: 'bench' },
      plugins: [{ module: join(projectRoot, 'plugins/llm-scripted/index.ts'), config: { paceMs: 0, fragmentChars: 6, scripts: { bench: scriptPath } } }],
    },
  });
  const session = await harness.createSession({ cwd: dir });
  const points: Point[] = [];
  let chunks = 0;
  let events = 0;
  const started = performance.now();
  const marks = new Set([BASELINE_TURNS, 100, 250, 500, 1_000, 1_500, TURNS]);
  for (let turn = 1; turn <= TURNS; turn++) {
    for await (const event of session.run(`status ${turn}`)) {
      events++;
      if (event.type === 'assistant/chunk') chunks++;
    }
    if (marks.has(turn)) {
      await session.session.checkpoint();
      collectGarbage();
      collectGarbage();
      const memory = process.memoryUsage();
      points.push({
        turns: turn,
        rssMiB: memory.rss / MiB,
        heapUsedMiB: memory.heapUsed / MiB,
        surfaceMessages: session.state.messages.length,
        surfaceJsonKiB: JSON.stringify(session.state.messages).length / 1024,
        journalKiB: statSync(session.path).size / 1024,
        chunks,
        events,
      });
    }
  }
  const wallS = (performance.now() - started) / 1000;
  await harness.dispose();
  rmSync(dir, { recursive: true, force: true });
  return { points, wallS };
}

interface JournalBytes {
  readonly stream: StreamName;
  readonly sseEvents: number;
  readonly sseBytes: number;
  readonly chunks: number;
  readonly chunkRecordBytes: number;
  readonly fileBytes: number;
}

/** Journal bytes for the two recordings through the full Harness path. */
async function journalBytes(): Promise<JournalBytes[]> {
  const out: JournalBytes[] = [];
  const servers = await Promise.all(
    (Object.keys(STREAMS) as StreamName[]).map(async (name) => {
      const { body } = repeatedBody(STREAMS[name], 4_000); // a few thousand events: stable averages, quick
      const server = await startFixtureServer({ defaultResponse: { body } });
      return { name, body, server };
    }),
  );
  const served = Object.fromEntries(
    servers.map(({ name, body, server }) => [
      name,
      { url: name === 'openai' ? server.openaiBaseURL : server.anthropicBaseURL, root: server.url, eventCount: countEvents(body), bytes: Buffer.byteLength(body), repeat: 0 },
    ]),
  ) as Served;
  const rig = await harnessRig(served);
  try {
    for (const { name, body } of servers) {
      await rig.consume[name]();
      const text = readFileSync(rig.lastJournalPath!, 'utf8');
      let chunkRecordBytes = 0;
      let chunks = 0;
      for (const line of text.split('\n')) {
        if (!line.includes('"type":"assistant/chunk"')) continue;
        chunks++;
        chunkRecordBytes += Buffer.byteLength(line) + 1;
      }
      out.push({ stream: name, sseEvents: countEvents(body), sseBytes: Buffer.byteLength(body), chunks, chunkRecordBytes, fileBytes: Buffer.byteLength(text) });
    }
  } finally {
    await rig.close();
    await Promise.all(servers.map(({ server }) => server.close()));
  }
  return out;
}

export async function run(): Promise<BenchResult> {
  const report = await inChild<SessionReport>(import.meta.url, ['--child', 'session'], { nodeArgs: ['--expose-gc'], timeoutMs: 1_800_000 });
  const bytes = await inChild<JournalBytes[]>(import.meta.url, ['--child', 'bytes'], { timeoutMs: 300_000 });
  const base = report.points[0]!;
  const last = report.points.at(-1)!;
  const turns = last.turns - base.turns;
  const perTurn = (a: number, b: number) => ((a - b) * 1024) / turns; // KiB per turn
  const heapPerTurn = perTurn(last.heapUsedMiB, base.heapUsedMiB);
  const rssPerTurn = perTurn(last.rssMiB, base.rssMiB);
  const surfacePerTurn = (last.surfaceJsonKiB - base.surfaceJsonKiB) / turns;
  const heapToSurface = heapPerTurn / surfacePerTurn;
  const rows: Row[] = report.points.map((p) => ({
    turns: p.turns,
    'RSS MiB': round(p.rssMiB),
    'heap after GC MiB': round(p.heapUsedMiB),
    'RSS / at 20 turns': `${(p.rssMiB / base.rssMiB).toFixed(2)}x`,
    'heap / at 20 turns': `${(p.heapUsedMiB / base.heapUsedMiB).toFixed(2)}x`,
    'surface messages': p.surfaceMessages,
    'surface JSON KiB': round(p.surfaceJsonKiB),
    'journal KiB': round(p.journalKiB),
  }));
  const byteRows: Row[] = bytes.map((b) => ({
    stream: b.stream,
    'SSE events (bytes)': `${b.sseEvents} (${round(b.sseBytes / 1024)} KiB)`,
    'SSE bytes/event': round(b.sseBytes / b.sseEvents),
    'chunks journaled': b.chunks,
    'assistant/chunk bytes/chunk': round(b.chunkRecordBytes / b.chunks),
    'journal file bytes / SSE event': round(b.fileBytes / b.sseEvents),
    'journal file / SSE body': `${(b.fileBytes / b.sseBytes).toFixed(2)}x`,
  }));
  // Retained beyond the surface: heap growth per turn more than ~4x the surface's JSON per turn (an
  // object graph costs a few times its JSON text) means something else is kept per turn.
  const flagged = heapToSurface > 4;
  return {
    name: 'memory',
    summary: `RSS and heap after GC over a ${TURNS}-turn scripted session (baseline: the same session at ${BASELINE_TURNS} turns); journal bytes per streamed chunk`,
    tables: [
      { title: `one session, ${TURNS} turns (llm-scripted, ~${Math.round(last.chunks / last.turns)} chunks per turn), ${round(report.wallS)} s`, rows },
      {
        title: `growth per turn (${BASELINE_TURNS} → ${TURNS} turns)`,
        rows: [
          { measure: 'heap after GC, KiB per turn', value: round(heapPerTurn) },
          { measure: 'RSS, KiB per turn', value: round(rssPerTurn) },
          { measure: 'the surface itself (its messages as JSON), KiB per turn', value: round(surfacePerTurn) },
          { measure: 'heap growth / surface JSON growth', value: `${heapToSurface.toFixed(2)}x` },
        ],
      },
      { title: 'journal bytes per streamed chunk (the two stream-bench recordings through the Harness path)', rows: byteRows },
    ],
    targets: [
      check(
        `heap after GC at ${TURNS} turns / at ${BASELINE_TURNS} turns`,
        `${(last.heapUsedMiB / base.heapUsedMiB).toFixed(2)}x (+${round(heapPerTurn)} KiB/turn)`,
        '— (growth only with the surface)',
        null,
      ),
      check(`RSS at ${TURNS} turns / at ${BASELINE_TURNS} turns`, `${(last.rssMiB / base.rssMiB).toFixed(2)}x (+${round(rssPerTurn)} KiB/turn)`, '— (informational)', null),
      check('heap growth per turn beyond the surface (heap KiB/turn ÷ surface JSON KiB/turn)', `${heapToSurface.toFixed(2)}x`, '≤ 4x (an object graph costs a few times its JSON)', !flagged),
      ...bytes.map((b) =>
        check(`journal bytes / provider SSE bytes (${b.stream})`, `${(b.fileBytes / b.sseBytes).toFixed(2)}x (${round(b.chunkRecordBytes / b.chunks)} B per chunk record)`, '— (informational)', null),
      ),
    ],
    notes: [
      'RSS and heap from process.memoryUsage() after two full GCs (child process with --expose-gc), checkpointed journal; RSS includes V8 heap reservations, so it moves in steps',
      'the surface grows by 2 messages per turn (the prompt and the assembled reply); the session state keeps the surface only — chunks and events are in the journal file, not in memory',
      "journal bytes: every chunk is one JSON line {seq,type,atMs,data:{turn,step,chunk}}; the finish chunk carries the whole replay envelope; the SSE body is the provider's wire format (with its own per-event JSON envelope)",
    ],
  };
}

if (isMain(import.meta.url)) {
  if (process.argv[2] === '--child') {
    answer(process.argv[3] === 'session' ? await sessionChild() : await journalBytes());
    process.exit(0);
  } else printResult(await run());
}
