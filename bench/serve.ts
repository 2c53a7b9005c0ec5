/**
 * SSE fan-out benchmark (issue 18): one session streaming a turn through `harness serve`
 * (plugins/serve, real HTTP on 127.0.0.1) to 100 SSE subscribers at once.
 *
 * Latency of one event at one subscriber = when the subscriber's `fetch` body delivered the frame
 * `id: <seq>` − when the journal appended that event (a `session/event` sink registered before the
 * server's own). Server and subscribers share this process and its clock (`performance.now()`), so
 * the figure includes the subscribers' own parsing on the same 2 cores — an upper bound on what a
 * remote client would see from the server.
 *
 * Reported: p50 / p99 for 100 subscribers, and, as the same-run baseline, for 1 subscriber; the
 * ratio 100 / 1 of each; every delivered frame is also checked: each subscriber sees every seq of
 * the turn exactly once, in order. Interleaved repetitions (1, 100, 1, 100, …). Both stores, in the
 * same run: the file store, and the PostgreSQL store (plugins/journal-postgres, a throwaway local
 * cluster with fsync=on, test/support/postgres.ts) — its rows, and PostgreSQL ÷ file of each figure.
 * `npm run bench -- serve`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, type AnySessionEvent } from '../runtime/index.ts';
import { serveConfigSchema, startServer, type RunningServer } from '../plugins/serve/index.ts';
import { startCluster } from '../test/support/postgres.ts';
import { check, envInt, isMain, median, percentile, printResult, ratioSpread, round, stat, type BenchResult } from './support.ts';

const SUBSCRIBERS = envInt('BENCH_SERVE_SUBSCRIBERS', 100);
const REPETITIONS = envInt('BENCH_SERVE_REPETITIONS', 3);
/** Delay between the scripted model's chunks, ms (a steady stream rather than one burst). */
const PACE_MS = envInt('BENCH_SERVE_PACE_MS', 2, 0);
const TOKEN = 'bench-serve-token-0123456789';
const root = fileURLToPath(new URL('..', import.meta.url));

/** ~300 text chunks per turn. */
const SCRIPT = { replies: [{ reply: { text: 'stream '.repeat(300) } }] };

interface Phase {
  readonly subscribers: number;
  readonly latenciesMs: number[];
  readonly events: number;
  /** Subscribers that did not see every seq exactly once, in order. */
  readonly broken: number;
}

async function subscribe(url: string, signal: AbortSignal, onFrame: (seq: number, atMs: number) => void): Promise<void> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` }, signal });
  if (!response.ok || response.body === null) throw new Error(`stream answered ${response.status}`);
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body) {
    const atMs = performance.now();
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    let end: number;
    for (end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (frame.startsWith('id: ')) onFrame(Number(frame.slice(4, frame.indexOf('\n'))), atMs);
    }
  }
}

async function phase(server: RunningServer, appendedAt: Map<string, Map<number, number>>, subscribers: number): Promise<Phase> {
  const turns = server.turns;
  const { id } = await turns.createSession({});
  const appended = new Map<number, number>();
  appendedAt.set(id, appended);
  const url = `${server.url}/v1/sessions/${id}/stream`;
  const seen: number[][] = Array.from({ length: subscribers }, () => []);
  const latenciesMs: number[] = [];
  // Subscribers connect first and are live before the turn starts.
  const controller = new AbortController();
  const streams = Array.from({ length: subscribers }, (_, i) =>
    subscribe(url, controller.signal, (seq, atMs) => {
      seen[i]!.push(seq);
      const at = appended.get(seq);
      if (at !== undefined) latenciesMs.push(atMs - at);
    }).catch((error: unknown) => {
      if (!controller.signal.aborted) throw error;
    }),
  );
  while (turns.subscriberCount(id) < subscribers || turns.catchingUpCount(id) > 0) await new Promise((r) => setTimeout(r, 5));
  await turns.submitTurn(id, { prompt: 'stream please' });
  const endSeq = (await turns.turnEnd(id))!.seq;
  // Wait for the last frame at every subscriber (bounded), then drop the connections.
  const deadline = Date.now() + 10_000;
  while (seen.some((s) => (s.at(-1) ?? 0) < endSeq) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  controller.abort();
  await Promise.all(streams);
  const expected = Array.from({ length: endSeq }, (_, i) => i + 1);
  const broken = seen.filter((s) => s.length !== expected.length || s.some((seq, i) => seq !== expected[i])).length;
  appendedAt.delete(id);
  return { subscribers, latenciesMs, events: endSeq, broken };
}

interface StoreRun {
  readonly one: Phase[];
  readonly many: Phase[];
}

/** The repetitions on one store (`store`: a postgres:// URL, else the file store of a temp data directory). */
async function onStore(dir: string, scriptPath: string, store?: string): Promise<StoreRun> {
  const harness = await createHarness({
    dataDir: join(dir, store === undefined ? 'data' : 'data-pg'),
    ...(store === undefined ? {} : { store }),
    config: {
      defaults: { provider: 'scripted', model: 'bench' },
      plugins: [
        { module: join(root, 'plugins/llm-scripted/index.ts'), config: { paceMs: PACE_MS, fragmentChars: 7, scripts: { bench: scriptPath } } },
        ...(store === undefined ? [] : [{ module: join(root, 'plugins/journal-postgres/index.ts') }]),
      ],
    },
  });
  // When each event was appended: registered before the server's sink, so it runs first.
  const appendedAt = new Map<string, Map<number, number>>();
  harness.kernel.bus.add('session/event', (delivery: { sessionId: string; event: AnySessionEvent }) => void appendedAt.get(delivery.sessionId)?.set(delivery.event.seq, performance.now()), {
    owner: 'bench',
  });
  const server = await startServer(harness, serveConfigSchema.parse({ port: 0 }), { token: TOKEN, cwd: dir });
  const one: Phase[] = [];
  const many: Phase[] = [];
  try {
    await phase(server, appendedAt, 1); // warm-up
    for (let i = 0; i < REPETITIONS; i++) {
      one.push(await phase(server, appendedAt, 1));
      many.push(await phase(server, appendedAt, SUBSCRIBERS));
    }
  } finally {
    await server.close();
    await harness.dispose();
  }
  return { one, many };
}

export async function run(): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'harness-bench-serve-'));
  const scriptPath = join(dir, 'script.json');
  writeFileSync(scriptPath, JSON.stringify(SCRIPT));
  const loadAtStart = loadavg();
  const cluster = await startCluster({ fsync: true });
  let file: StoreRun;
  let postgres: StoreRun;
  try {
    file = await onStore(dir, scriptPath);
    postgres = await onStore(dir, scriptPath, await cluster.createDatabase('bench_serve'));
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const loadAtEnd = loadavg();
  const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' / ');
  const p = (phases: Phase[], q: number): number[] => phases.map((ph) => percentile(ph.latenciesMs, q));
  const ratios = (a: number[], b: number[]): number[] => a.map((x, i) => x / b[i]!);
  const broken = [...file.one, ...file.many, ...postgres.one, ...postgres.many].reduce((n, ph) => n + ph.broken, 0);
  const ms = (values: number[]): string => `${round(median(values))} ms (${round(Math.min(...values))}–${round(Math.max(...values))})`;
  const frames = (phases: Phase[]): number => phases.reduce((n, ph) => n + ph.latenciesMs.length, 0);
  const rows = (name: string, run: StoreRun) => [
    { store: name, subscribers: 1, p50: ms(p(run.one, 50)), p99: ms(p(run.one, 99)), frames: frames(run.one) },
    { store: name, subscribers: SUBSCRIBERS, p50: ms(p(run.many, 50)), p99: ms(p(run.many, 99)), frames: frames(run.many) },
  ];
  const p50Many = p(file.many, 50);
  const p99Many = p(file.many, 99);
  const pgP50Many = p(postgres.many, 50);
  const pgP99Many = p(postgres.many, 99);
  return {
    name: 'serve',
    summary: `SSE fan-out: one session's turn (~${file.many[0]?.events ?? 0} events, ${PACE_MS} ms between chunks) through harness serve on 127.0.0.1 to ${SUBSCRIBERS} subscribers at once, against 1 subscriber in the same run, on the file store and on the PostgreSQL store; latency = frame received − event appended`,
    tables: [
      {
        title: `append → SSE frame received, ms (wall; median of ${REPETITIONS} repetitions, min–max)`,
        rows: [...rows('file', file), ...rows('postgres', postgres)],
      },
    ],
    targets: [
      check(`subscribers that missed, repeated or reordered an event (both stores)`, String(broken), '0', broken === 0),
      check(`SSE fan-out p50 / p99, ${SUBSCRIBERS} subscribers`, `${round(median(p50Many))} / ${round(median(p99Many))} ms`, '— (no target)', null),
      check(`p99 latency, ${SUBSCRIBERS} subscribers / 1 subscriber`, ratioSpread(stat(ratios(p99Many, p(file.one, 99)))), '— (informational)', null),
      check(`p50 latency, ${SUBSCRIBERS} subscribers / 1 subscriber`, ratioSpread(stat(ratios(p50Many, p(file.one, 50)))), '— (informational)', null),
      check(`SSE fan-out p50 / p99, ${SUBSCRIBERS} subscribers, PostgreSQL store`, `${round(median(pgP50Many))} / ${round(median(pgP99Many))} ms`, '— (no target)', null),
      check(`p50 latency, ${SUBSCRIBERS} subscribers, postgres ÷ file`, ratioSpread(stat(ratios(pgP50Many, p50Many))), '— (informational)', null),
      check(`p99 latency, ${SUBSCRIBERS} subscribers, postgres ÷ file`, ratioSpread(stat(ratios(pgP99Many, p99Many))), '— (informational)', null),
    ],
    notes: [
      "server and subscribers share one process (and this machine's cores): the subscribers' own parsing is inside the figure",
      'each frame is serialised once per event and shared by every subscriber (a WeakMap keyed by the frozen event); one store tail per session feeds all its subscribers, each with its own queue (plugins/serve/tail.ts)',
      'streams pass on stored events only (durable-only): an event reaches its subscribers when its journal batch is written, at most the journal flush interval (100 ms) after it was appended — that wait is inside every figure, for 1 subscriber as for 100',
      "PostgreSQL: a local throwaway cluster (fsync=on) on the same 2 cores; a batch reaches this server's streams when its transaction committed (one COMMIT per flushed batch), no network round trip",
      'ratios postgres ÷ file pair the i-th repetition of each store (the stores run one after the other in the same process, not interleaved)',
      `load average ${load(loadAtStart)} at the start, ${load(loadAtEnd)} at the end (1 / 5 / 15 min; 2 cores shared with other work)`,
    ],
  };
}

if (isMain(import.meta.url)) printResult(await run());
