/**
 * Stream benchmark (issue #9, 1): the CPU cost per streamed chunk of Harness against the raw
 * official SDK (the baseline), the Vercel AI SDK and pi-ai, on the same recorded provider streams.
 *
 * Streams: OpenAI Chat with two parallel tool calls and Anthropic with thinking (a signature delta)
 * then text, each repeated to ~20k SSE events (`BENCH_STREAM_CHUNKS`) by repeatSseFrames, served
 * over loopback by a server in its OWN process (bench/stream/server.ts), so its CPU is not counted.
 * Two serving modes (see server.ts): `paced` — one SSE event per write, 100 µs apart, as a provider's
 * token stream arrives: each read carries about one event (the headline) — and `burst` — the whole
 * body in one write by the fixture server (a backlog of 150–200 events per read; the SDKs' SSE
 * decoders, and the batching of everything after them, behave differently then).
 *
 * Contenders (bench/stream/contenders.ts): raw SDK; the Harness agent loop (`session.run`: adapter
 * → `llm/stream` → BlockAssembler → a journal record per chunk with checkpoints → every event to
 * the consumer), as it ships (`loop`, no `llm/stream` middleware) and with 3 async-generator
 * pass-through middlewares (`loop-mw`); the model call alone (`harness`, with the 3 middlewares);
 * Vercel AI SDK `streamText().fullStream`; pi-ai `stream()`. Each measurement batch is a fresh
 * consumer process (`--expose-gc`): warm-up streams — at least `BENCH_STREAM_WARMUPS` (3) and
 * at least `BENCH_STREAM_WARMUP_EVENTS` (50,000) SSE events, so short streams get more of them (the
 * first is reported as "cold") — then `BENCH_STREAM_RUNS` (3) CPU runs back to back (a long-lived
 * process's steady state; no forced GC in between — `BENCH_STREAM_GC_EACH_RUN=1` puts one before
 * each, the earlier method), then one heap run after a full GC. CPU = process user + system over
 * the whole consumption. Batches are interleaved: `BENCH_STREAM_ROUNDS` (7) rounds, each running
 * every contender on every stream, with a rotating order. Figure: median CPU µs per SSE event;
 * ratio = the median of the per-round ratios (each round: the contender's median / raw's median in
 * that round), range = their min–max. The 2,000-tool-call streams (22–24k events each) take
 * `BENCH_STREAM_TOOLS_RUNS` (1) warm-up (and more, to the warm-up events) and CPU run.
 *
 * Also measured (informational): Harness's own overhead by layer with an in-memory SDK stream (no
 * network, no SDK parsing; bench/stream/layers.ts), to show where the time goes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ensurePeers, harnessVersions, peerVersions } from './peers.ts';
import { CONTENDERS, type Contender, type Measured, type Sample, type Served } from './stream/contenders.ts';
import type { LayerReport } from './stream/layers.ts';
import { BLOCKS_PER_REPEAT, MAIN_STREAMS, MODES, providerOf, STREAMS, TOOL_CALLS, type Mode, type ServedStream, type StreamName } from './stream/server.ts';
import { check, envInt, envList, inChild, isMain, median, printResult, ratioSpread, round, stat, TSX_IMPORT, type BenchResult, type Row, type TargetCheck } from './support.ts';

const ROUNDS = envInt('BENCH_STREAM_ROUNDS', 7);
const RUNS = envInt('BENCH_STREAM_RUNS', 3);
const WARMUPS = envInt('BENCH_STREAM_WARMUPS', 3, 0);
/**
 * SSE events each batch consumes in warm-ups at least (more warm-up streams when they are short):
 * the CPU runs are a long-lived process's steady state, whatever the stream length. 0: the
 * warm-up count alone decides (the method before stop 33).
 */
const WARMUP_EVENTS = envInt('BENCH_STREAM_WARMUP_EVENTS', 50_000, 0);
/** Warm-ups and CPU runs on the long 2,000-tool-call streams. */
const TOOLS_RUNS = envInt('BENCH_STREAM_TOOLS_RUNS', 1);
const GC_EACH_RUN = process.env.BENCH_STREAM_GC_EACH_RUN === '1';
const STREAM_NAMES: readonly StreamName[] = envList('BENCH_STREAM_NAMES', Object.keys(STREAMS) as StreamName[]);
const SELECTED_MODES: readonly Mode[] = envList('BENCH_STREAM_MODES', MODES);
const SELECTED: readonly Contender[] = envList('BENCH_STREAM_CONTENDERS', CONTENDERS);
/** The model call (adapter → middleware → assembler → journal; issue 9's contender) ÷ raw. */
const CALL_TARGET = 1.25;
/** The whole agent loop ÷ raw, CPU per event (issue 22). */
const LOOP_TARGETS: Record<Mode, Record<'openai' | 'anthropic', number>> = { paced: { openai: 1.2, anthropic: 1.2 }, burst: { openai: 1.25, anthropic: 1.5 } };
/** Heap bytes per event the loop adds to the raw SDK's. */
const LOOP_HEAP_TARGET = 1.5 * 1024;
/** 2,000 tool calls in one message: the loop's ratio there ÷ its ratio on the single-message stream. */
const TOOLS_TARGET = 1.5;

const LABELS: Record<Contender, string> = {
  raw: 'raw SDK (baseline)',
  floor: 'journal floor (raw SDK + a JSON line per event, batched writes, fsync; the tool calls journaled, one checkpoint, run)',
  harness: 'Harness model call',
  loop: 'Harness agent loop',
  'loop-mw': 'Harness agent loop + 3 middlewares',
  vercel: 'Vercel AI SDK streamText',
  pi: 'pi-ai stream',
};

/** Which contenders run on a stream: the peers only on the single-message streams. */
function runsOn(contender: Contender, stream: StreamName): boolean {
  return (MAIN_STREAMS as readonly string[]).includes(stream) || contender === 'raw' || contender === 'floor' || contender === 'harness' || contender === 'loop' || contender === 'loop-mw';
}

function load(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(' / ');
}

interface Server {
  readonly modes: Record<Mode, Served>;
  stop(): void;
}

/** Starts bench/stream/server.ts in its own process and reads the URLs it prints. */
function startServer(): Promise<Server> {
  const file = fileURLToPath(new URL('./stream/server.ts', import.meta.url));
  const child: ChildProcess = spawn(process.execPath, ['--import', TSX_IMPORT, file], { stdio: ['pipe', 'pipe', 'inherit'], env: process.env });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (text: string) => {
      out += text;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line === undefined) return;
      child.stdout!.off('data', onData);
      const { modes } = JSON.parse(line) as { modes: Record<Mode, Served> };
      resolve({
        modes,
        stop() {
          child.stdin!.end();
          if (child.pid !== undefined) child.kill('SIGTERM');
        },
      });
    };
    child.stdout!.setEncoding('utf8').on('data', onData);
    child.once('exit', (code) => reject(new Error(`bench stream server exited early (code ${code}): ${out}`)));
    child.once('error', reject);
  });
}

/** How many warm-up streams the batches ran, per stream length (for the notes). */
function warmupSummary(cells: ReadonlyMap<string, Cell>): string {
  const counts = new Map<string, number>();
  for (const [name, cell] of cells) if (cell.warmupCount !== undefined) counts.set(name.split('/')[1]!, cell.warmupCount);
  return [...counts].map(([stream, count]) => `${count} warm-up streams of ${stream}`).join(', ') || 'no batch ran';
}

interface Cell {
  samples: Sample[];
  /** Per round: the median CPU µs per event of that round's batch. */
  rounds: number[];
  /** Per round: the median heap bytes allocated per event. */
  heapRounds: number[];
  /** Per round: CPU µs per event of the batch's first stream (a fresh process: cold). */
  coldRounds: number[];
  /** Warm-up streams per batch (the same in every round). */
  warmupCount?: number;
  error?: string;
}

/** What a correct consumption sees: the recording's blocks per repetition, times the repetitions. */
function expectedBlocks(stream: StreamName, served: ServedStream): number {
  return BLOCKS_PER_REPEAT[stream] * served.repeat;
}

function problemOf(contender: Contender, sample: Sample, stream: StreamName, served: ServedStream): string | undefined {
  if (contender === 'raw' || contender === 'floor') return sample.items > 0.9 * served.eventCount ? undefined : `saw ${sample.items} events of ${served.eventCount}`;
  if (/^error/.test(sample.finish) || sample.finish === 'none') return `finished with ${sample.finish}`;
  if (sample.blocks !== expectedBlocks(stream, served)) return `assembled ${sample.blocks} blocks, expected ${expectedBlocks(stream, served)}`;
  return undefined;
}

export async function run(): Promise<BenchResult> {
  const peersMissing = SELECTED.some((c) => c === 'vercel' || c === 'pi') ? ensurePeers() : undefined;
  const contenders = SELECTED.filter((c) => peersMissing === undefined || (c !== 'vercel' && c !== 'pi'));
  const server = await startServer();
  const cells = new Map<string, Cell>();
  const key = (mode: Mode, stream: StreamName, contender: Contender) => `${mode}/${stream}/${contender}`;
  const loadStart = load();
  const roundLoads: string[] = [];
  try {
    for (const mode of SELECTED_MODES) {
      const served = server.modes[mode];
      for (let roundIndex = 0; roundIndex < ROUNDS; roundIndex++) {
        roundLoads.push(`${mode} round ${roundIndex + 1}: ${load()}`);
        process.stderr.write(`[${mode} round ${roundIndex + 1}/${ROUNDS}, load ${load()}]`);
        for (const stream of STREAM_NAMES) {
          const here = contenders.filter((c) => runsOn(c, stream));
          for (let k = 0; k < here.length; k++) {
            const contender = here[(k + roundIndex) % here.length]!;
            const cell = cells.get(key(mode, stream, contender)) ?? { samples: [], rounds: [], heapRounds: [], coldRounds: [] };
            cells.set(key(mode, stream, contender), cell);
            if (cell.error !== undefined) continue;
            try {
              const tools = !(MAIN_STREAMS as readonly string[]).includes(stream);
              const { samples, heapSamples, cold, warmupCount } = await inChild<Measured>(
                new URL('./stream/contenders.ts', import.meta.url).href,
                [contender, stream, String(tools ? TOOLS_RUNS : WARMUPS), String(tools ? TOOLS_RUNS : RUNS), JSON.stringify(served), '1', String(WARMUP_EVENTS)],
                {
                  nodeArgs: ['--expose-gc'],
                  timeoutMs: 300_000,
                },
              );
              for (const sample of samples) {
                const problem = problemOf(contender, sample, stream, served[stream]);
                if (problem !== undefined) throw new Error(problem);
              }
              cell.samples.push(...samples);
              cell.rounds.push(median(samples.map((s) => s.cpuUs / served[stream].eventCount)));
              cell.heapRounds.push(median(heapSamples.map((bytes) => bytes / served[stream].eventCount)));
              cell.coldRounds.push(cold.cpuUs / served[stream].eventCount);
              cell.warmupCount = warmupCount;
            } catch (error) {
              cell.error = error instanceof Error ? error.message.split('\n').slice(0, 3).join(' ') : String(error);
            }
            process.stderr.write('.');
          }
        }
      }
    }
  } finally {
    server.stop();
  }
  const loadEnd = load();
  process.stderr.write('\n');
  const layers = await inChild<LayerReport>(new URL('./stream/layers.ts', import.meta.url).href, [], { nodeArgs: ['--expose-gc'], timeoutMs: 300_000 }).catch((error: unknown) => error as Error);

  const tables: { title?: string; rows: Row[] }[] = [];
  const targets: TargetCheck[] = [];
  for (const mode of SELECTED_MODES) {
    const served = server.modes[mode];
    const rows: Row[] = [];
    /** Paired by round (the contenders of a round ran back to back): the median of the per-round ratios. */
    const ratioOf = (stream: StreamName, contender: Contender, measure: 'cpu' | 'heap' | 'cold' = 'cpu'): { median: number; figure: string } | undefined => {
      const raw = cells.get(key(mode, stream, 'raw'));
      const cell = cells.get(key(mode, stream, contender));
      if (cell === undefined || cell.error !== undefined || raw === undefined || raw.error !== undefined) return undefined;
      const pick = (of: Cell): number[] => (measure === 'heap' ? of.heapRounds : measure === 'cold' ? of.coldRounds : of.rounds);
      const mine = pick(cell);
      const base = pick(raw);
      const s = stat(mine.map((value, i) => value / base[i]!));
      return { median: s.median, figure: ratioSpread(s) };
    };
    for (const stream of STREAM_NAMES) {
      for (const contender of SELECTED) {
        if (!runsOn(contender, stream)) continue;
        const cell = cells.get(key(mode, stream, contender));
        const base = { stream: `${stream} (${served[stream].eventCount} events)`, contender: LABELS[contender] };
        const empty = { 'ratio to raw': '—', 'heap B/event': '—', 'heap ratio': '—', 'wall ms/stream': '—', 'items seen': '—' };
        if (cell === undefined) {
          rows.push({ ...base, 'CPU µs/event': `SKIPPED — ${peersMissing ?? 'not selected'}`, ...empty });
          continue;
        }
        if (cell.error !== undefined) {
          rows.push({ ...base, 'CPU µs/event': `FAILED — ${cell.error}`, ...empty });
          continue;
        }
        const per = stat(cell.samples.map((s) => s.cpuUs / served[stream].eventCount));
        rows.push({
          ...base,
          'CPU µs/event': `${round(per.median)} (${round(per.min)}–${round(per.max)})`,
          'ratio to raw': contender === 'raw' ? '1.00x (baseline)' : (ratioOf(stream, contender)?.figure ?? '—'),
          'heap B/event': Math.round(median(cell.heapRounds)),
          'heap ratio': contender === 'raw' ? '1.00x' : (ratioOf(stream, contender, 'heap')?.figure ?? '—'),
          'wall ms/stream': round(median(cell.samples.map((s) => s.wallMs))),
          'items seen': cell.samples[0]!.items,
        });
      }
      const label = `${mode} ${stream}`;
      const call = ratioOf(stream, 'harness');
      const loop = ratioOf(stream, 'loop');
      const provider = providerOf(stream);
      if ((MAIN_STREAMS as readonly string[]).includes(stream)) {
        const loopTarget = LOOP_TARGETS[mode][provider];
        const floor = ratioOf(stream, 'floor');
        targets.push(
          check(
            `agent loop / raw SDK, CPU per event (${label})`,
            loop === undefined ? 'not measured' : `${loop.figure}${floor === undefined ? '' : `; journal floor ${floor.median.toFixed(2)}x`}`,
            `≤ ${loopTarget.toFixed(2)}x`,
            loop === undefined ? undefined : loop.median <= loopTarget,
          ),
        );
        if (floor !== undefined) {
          const rawCell = cells.get(key(mode, stream, 'raw'))!;
          const floorCell = cells.get(key(mode, stream, 'floor'))!;
          const loopCell = cells.get(key(mode, stream, 'loop'));
          const heapAdded = stat(floorCell.heapRounds.map((value, i) => value - rawCell.heapRounds[i]!));
          const gap =
            loop === undefined || loopCell === undefined || loopCell.error !== undefined
              ? ''
              : `; loop − floor ${(loop.median - floor.median).toFixed(2)}x, ${round(median(loopCell.rounds.map((value, i) => value - floorCell.rounds[i]!)))} µs/event`;
          targets.push(
            check(
              `journal floor / raw SDK, CPU per event: what the journal contract alone costs (${label})`,
              `${floor.figure}${gap}; heap +${Math.round(heapAdded.median)} B/event`,
              `— (the floor under the ≤ ${loopTarget.toFixed(2)}x target)`,
              null,
            ),
          );
        }
        const cold = ratioOf(stream, 'loop', 'cold');
        const rawCold = cells.get(key(mode, stream, 'raw'));
        if (cold !== undefined && rawCold !== undefined) {
          targets.push(
            check(
              `cold: the first stream of a fresh process, agent loop / raw SDK, CPU per event (${label})`,
              `${cold.figure}; raw ${round(median(rawCold.coldRounds))} µs/event cold, ${round(median(rawCold.samples.map((s) => s.cpuUs / served[stream].eventCount)))} warm`,
              '— (informational: the targets are the steady state)',
              null,
            ),
          );
        }
        targets.push(
          check(`model call / raw SDK, CPU per event (${label})`, call?.figure ?? 'not measured', `≤ ${CALL_TARGET.toFixed(2)}x`, call === undefined ? undefined : call.median <= CALL_TARGET),
        );
        for (const peer of ['vercel', 'pi'] as const) {
          const other = ratioOf(stream, peer);
          const figure = loop === undefined || other === undefined ? (peersMissing ?? 'not measured') : `loop ${loop.median.toFixed(2)}x vs ${other.median.toFixed(2)}x`;
          targets.push(check(`agent loop ahead of ${LABELS[peer]} (${label})`, figure, 'loop < peer', loop === undefined || other === undefined ? undefined : loop.median < other.median));
        }
        const rawCell = cells.get(key(mode, stream, 'raw'));
        const loopCell = cells.get(key(mode, stream, 'loop'));
        if (rawCell?.error === undefined && loopCell?.error === undefined && rawCell !== undefined && loopCell !== undefined) {
          const added = stat(loopCell.heapRounds.map((value, i) => value - rawCell.heapRounds[i]!));
          targets.push(
            check(
              `heap bytes per event the agent loop adds to the raw SDK's (${label})`,
              `+${Math.round(added.median)} B (${Math.round(added.min)}–${Math.round(added.max)}); raw ${Math.round(median(rawCell.heapRounds))} B`,
              `≤ ${LOOP_HEAP_TARGET} B`,
              added.median <= LOOP_HEAP_TARGET,
            ),
          );
        }
      } else {
        const single = provider as StreamName;
        const single_ = ratioOf(single, 'loop');
        const figure =
          loop === undefined || single_ === undefined
            ? 'not measured'
            : `${(loop.median / single_.median).toFixed(2)}x (loop ${loop.median.toFixed(2)}x here, ${single_.median.toFixed(2)}x on ${single})`;
        targets.push(
          check(
            `${TOOL_CALLS} tool calls in one message: agent loop CPU per event (÷ raw) / the single-message stream's (${label})`,
            figure,
            `≤ ${TOOLS_TARGET.toFixed(2)}x`,
            loop === undefined || single_ === undefined ? undefined : loop.median / single_.median <= TOOLS_TARGET,
          ),
        );
      }
    }
    tables.push({
      title: `${mode}: ${mode === 'paced' ? 'one SSE event per write, 100 µs apart (a provider trickle: ~1 event per read) — the headline' : 'the whole body in one write (fixture server): a backlog of events per read — secondary'}`,
      rows,
    });
  }
  if (layers instanceof Error) tables.push({ title: 'Harness overhead by layer', rows: [{ layer: `FAILED — ${layers.message.split('\n')[0]}` }] });
  else tables.push({ title: `Harness overhead by layer (in-memory SDK events, no network; ${layers.note})`, rows: layers.rows });

  const versions = {
    ...Object.fromEntries(
      Object.entries(harnessVersions())
        .filter(([name]) => name === 'openai' || name === '@anthropic-ai/sdk')
        .map(([n, v]) => [`harness ${n}`, v]),
    ),
    ...peerVersions(),
  };
  return {
    name: 'stream',
    summary: 'CPU per streamed chunk: Harness and the peers against the raw official SDK, same recorded streams over loopback (issue #9)',
    tables,
    targets,
    notes: [
      `load average (1 / 5 / 15 min) at the start of the stream bench: ${loadStart}; at its end: ${loadEnd}; per round: ${roundLoads.join('; ')} — other sessions share these 2 cores, so only the ratios (same round, back to back) mean much`,
      'journal floor (bench/stream/contenders.ts JournalFloor): the raw SDK stream plus only what the journal contract needs per event, no runtime — a record `{ seq, type, atMs, data: { turn, step, chunk } }` per SDK event (chunk: OpenAI `choices[0]`, Anthropic the event; lines of about the size of the loop’s chunk records), `JSON.stringify` of it, the lines concatenated and written with one `write(2)` per 64 KiB or 100 ms (one in flight), fsync at the end; for the tool calls of a message (bench/stream/contenders.ts floorToolCalls) the message, a `tool/call`, `approval/decided` and `tool/start` record each, one write + fsync, the arguments parsed and the bench tool run, a `tool/result` record each; loop − floor = what the runtime adds beyond the contract (validation, freeze, fold, assembler, events to the consumer, the async hops, the close-out of each call)',
      'agent loop: `harness.createSession({ maxSteps: 1 })` and `session.run("hi")` iterated to the end by the consumer (bench/stream/contenders.ts loopTurn): request hooks, no `llm/stream` middleware (`loop-mw`: the 3 below), the assembler, a journal record per chunk with checkpoints, every event to the consumer, `assistant/message`, and each tool call of the message taking the real path (bench/stream/contenders.ts BENCH_TOOLS: the tools the recordings call are registered and every call is approved — parse, approval/decided, tool/start, a checkpoint (write + fsync) before the body, the body (a short string), tool/result; a tool/result with an error code fails the bench; before 2026-12-02 08:00 no tool was registered and every call took the unknown-tool error path), then MAX_STEPS_EXCEEDED instead of a second call; model call: the per-call path alone (bench/stream/contenders.ts harnessCall)',
      `heap = bytes allocated on the JS heap during one more consumption after the CPU runs, started after a full GC (v8.GCProfiler: growth of used heap plus what each GC freed), per SSE event; ratio = median of per-round ratios; the loop's added bytes = loop − raw per round`,
      `the -tools streams: one message with ${TOOL_CALLS} tool calls (openai-chat/single-tool-call-get-weather.sse, anthropic/text-then-tool-use-input-json-delta.sse repeated by repeatSseFrames); peers are not run on them`,
      `CPU = consumer process user + system over the whole consumption (request to last chunk; Harness includes its journal checkpoints); the server runs in another process; median of ${ROUNDS} interleaved rounds × ${RUNS} CPU runs back to back (the -tools streams ${TOOLS_RUNS}) per contender, each batch a fresh process whose warm-ups consumed at least ${WARMUP_EVENTS} SSE events (BENCH_STREAM_WARMUP_EVENTS; ${warmupSummary(cells)}) — V8 settles by the events it has run, and after fewer the CPU runs measure the JIT's warm-up, not the steady state; the first stream of each batch is reported as "cold" — ${GC_EACH_RUN ? 'a full GC before each CPU run (BENCH_STREAM_GC_EACH_RUN=1, the earlier method)' : "no forced GC between the CPU runs (a long-lived process's steady state: a full GC before each run, the earlier method, deoptimises code whose maps died in it and puts the re-optimisation into the measured run)"}; ratio = median of the per-round ratios (contender's round median / raw's round median), range = their min–max`,
      'per event = per SSE event with data in the served body (the same denominator for every contender); "items seen" = what each contender iterated (Harness: its StreamChunks, Vercel: fullStream parts, pi: events)',
      'Harness middlewares (`loop-mw`, `harness`): 3 × `async function* (request, next) { for await (const chunk of next()) yield chunk; }` — the form DESIGN shows a plugin author; `(request, next) => next()` would cost nothing per chunk',
      `Harness journal: a real FileJournal per stream in a temp dir, every chunk appended as assistant/chunk, checkpoint (write + fsync) before the call and at turn end, as runtime/agent/session.ts does`,
      `versions: ${Object.entries(versions)
        .map(([name, version]) => `${name} ${version}`)
        .join(', ')} (pi-ai uses its own openai / @anthropic-ai/sdk copies; Vercel speaks HTTP itself)`,
      ...(peersMissing ? [`peers SKIPPED: ${peersMissing}`] : []),
    ],
  };
}

if (isMain(import.meta.url)) printResult(await run());
