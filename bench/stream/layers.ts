/**
 * Harness's own cost per stream chunk, layer by layer, without network or SDK parsing: the
 * recorded stream's events, already parsed, come from an in-memory async generator standing in for
 * the SDK's event iterator (with a turn of the event loop before each event, as a network stream
 * delivers them), and the adapter's SDK client is replaced by one that returns it. Each row adds
 * one layer to the one above; interleaved repetitions, median CPU µs per event.
 *
 * Run by bench/stream.ts in a child process (`--expose-gc`); prints `{ rows, note }`.
 */
import { BlockAssembler } from '../../runtime/llm/assembler.ts';
import { createJournal } from '../../runtime/session/journal.ts';
import { splitSseFrames } from '../../test/support/fixture-server.ts';
import { answer, cpuMicros, envInt, isMain, median, round, type Row } from '../support.ts';
import { harnessRig, passThrough, type Served } from './contenders.ts';
import { repeatedBody, STREAMS, type StreamName } from './server.ts';

export interface LayerReport {
  readonly rows: Row[];
  readonly note: string;
}

const REPS = envInt('BENCH_LAYER_REPS', 7);
/**
 * Events each layer runs before it is measured (as the stream bench's BENCH_STREAM_WARMUP_EVENTS):
 * a full GC before every repetition, the earlier method, put the JIT's re-optimisation into each
 * measured run — it read the journal layer at +10–12 µs per event on 5,000-event streams, ~2 in the
 * steady state.
 */
const WARMUP_EVENTS = envInt('BENCH_STREAM_WARMUP_EVENTS', 50_000, 0);

function parsedEvents(name: StreamName): unknown[] {
  const { body } = repeatedBody(STREAMS[name], envInt('BENCH_STREAM_CHUNKS', 20_000));
  const events: unknown[] = [];
  for (const frame of splitSseFrames(body)) {
    const match = /^data: (.*)$/m.exec(frame);
    if (match === null || match[1] === '[DONE]') continue;
    const event = JSON.parse(match[1]!) as { type?: string };
    if (event.type !== 'ping') events.push(event); // the Anthropic SDK drops pings
  }
  return events;
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function measure(): Promise<LayerReport> {
  const nowhere = { url: 'http://127.0.0.1:9/v1', root: 'http://127.0.0.1:9', eventCount: 0, bytes: 0, repeat: 1 };
  const rig = await harnessRig(
    { openai: nowhere, anthropic: { ...nowhere, url: 'http://127.0.0.1:9' }, 'openai-tools': nowhere, 'anthropic-tools': { ...nowhere, url: 'http://127.0.0.1:9' } } as Served,
    0,
  );
  const { harness } = rig;
  const columns: Record<string, Record<string, number>> = {};
  try {
    for (const name of ['openai', 'anthropic'] as const) {
      const events = parsedEvents(name);
      async function* sdk(): AsyncGenerator<unknown> {
        for (let i = 0; i < events.length; i++) {
          await turn();
          yield events[i];
        }
      }
      const fake = { messages: { create: async () => sdk() }, chat: { completions: { create: async () => sdk() } } };
      const provider = name === 'openai' ? 'bench-openai' : 'bench-anthropic';
      const registration = harness.llm.registry.lookup(provider)!;
      (registration.adapter as unknown as { clients: { get: () => unknown } }).clients.get = () => fake;
      const options = () => ({ provider, model: name === 'openai' ? 'gpt-4o-2024-08-06' : 'claude-sonnet-4-20250514', messages: [], signal: new AbortController().signal });
      let sessions = 0;
      const withMiddlewares = async (body: () => Promise<void>) => {
        const disposers = [0, 1, 2].map(() => harness.ctx.on('llm/stream', passThrough as never));
        try {
          await body();
        } finally {
          for (const dispose of disposers) dispose();
        }
      };
      const throughService = async (journaled: boolean) => {
        const journal = journaled ? await createJournal({ dataDir: harness.dataDir, id: `layers-${name}-${sessions++}`, bus: harness.kernel.bus }) : undefined;
        await journal?.checkpoint();
        const assembler = new BlockAssembler();
        for await (const chunk of harness.llm.stream(options() as never)) {
          assembler.push(chunk);
          if (journal !== undefined) {
            const appended = journal.append('assistant/chunk', { turn: 1, step: 1, chunk });
            if (appended instanceof Promise) await appended;
          }
        }
        assembler.result();
        if (journal !== undefined) {
          await journal.checkpoint();
          await journal.close();
        }
      };
      const steps: Array<[string, () => Promise<void>]> = [
        [
          'in-memory SDK events (baseline: a turn of the event loop per event)',
          async () => {
            for await (const _event of sdk());
          },
        ],
        [
          '+ adapter (StreamPump + parser)',
          async () => {
            for await (const _chunk of registration.adapter.stream(options() as never));
          },
        ],
        [
          '+ llm/stream boundary (service, no middleware)',
          async () => {
            for await (const _chunk of harness.llm.stream(options() as never));
          },
        ],
        [
          '+ 3 async-generator pass-through middlewares',
          () =>
            withMiddlewares(async () => {
              for await (const _chunk of harness.llm.stream(options() as never));
            }),
        ],
        ['+ BlockAssembler', () => withMiddlewares(() => throughService(false))],
        ['+ FileJournal (assistant/chunk per chunk, checkpoints) = the full path', () => withMiddlewares(() => throughService(true))],
      ];
      const warmups = Math.max(1, Math.ceil(WARMUP_EVENTS / events.length));
      for (let i = 0; i < warmups; i++) for (const [, step] of steps) await step();
      const samples = steps.map(() => [] as number[]);
      for (let rep = 0; rep < REPS; rep++) {
        for (let k = 0; k < steps.length; k++) {
          const before = cpuMicros();
          await steps[k]![1]();
          samples[k]!.push((cpuMicros() - before) / events.length);
        }
      }
      const column: Record<string, number> = {};
      for (const [k, [label]] of steps.entries()) column[label] = median(samples[k]!);
      columns[name] = column;
    }
  } finally {
    await rig.close();
  }
  const labels = Object.keys(columns.openai!);
  const rows: Row[] = labels.map((label, k) => {
    const row: Row = { layer: label };
    for (const name of ['openai', 'anthropic']) {
      const value = columns[name]![label]!;
      const previous = k === 0 ? undefined : columns[name]![labels[k - 1]!]!;
      row[`${name} µs/event`] = round(value);
      row[`${name} added`] = previous === undefined ? '—' : `${value - previous >= 0 ? '+' : ''}${round(value - previous)}`;
    }
    return row;
  });
  return { rows, note: `median of ${REPS} interleaved repetitions after warm-up passes over ≥ ${WARMUP_EVENTS} events (at least one pass), no forced GC between them; process CPU` };
}

if (isMain(import.meta.url)) {
  answer(await measure());
  process.exit(0);
}
