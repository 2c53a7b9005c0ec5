/**
 * otel benchmark (issue 21): does a slow or dead collector slow a turn down?
 *
 * The same scripted turn (STEPS steps, each streaming a reply with two tool calls, then an answer:
 * ~4 spans per step) runs on five harnesses in this process, interleaved: without the otel plugin
 * (twice), and with it exporting to a receiver on 127.0.0.1 that answers at once (up), to one that
 * accepts requests and never answers (stalled), and to a port nobody listens on (down). The plugin's queue
 * is kept small (QUEUE spans) so that spans are dropped during the run, as they would be in a long
 * session against a dead collector; the dropped and failed counts come from `ctx.otel.stats()`.
 *
 * Reported: the turn's wall time with a stalled or a dead collector ÷ with a healthy one (the
 * collector's effect; target ≤ 1.15, within noise on a shared 2-core box), each ÷ no plugin at all
 * (the collector's effect plus the cost of tracing), the spans dropped, and — from a second harness
 * without the plugin — the noise of the run. Medians of REPETITIONS interleaved runs, min–max.
 * `npm run bench -- otel`.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHarness, defineTool, z, type AgentSession, type Harness } from '../runtime/index.ts';
import otelPlugin, { type SpanStats } from '../plugins/otel/index.ts';
import { scriptedModel, type ScriptFunction } from '../testing/index.ts';
import { check, envInt, isMain, measureCpuAsync, median, printResult, ratioSpread, round, stat, type BenchResult } from './support.ts';

const STEPS = envInt('BENCH_OTEL_STEPS', 30);
const REPETITIONS = envInt('BENCH_OTEL_REPETITIONS', 15);
const QUEUE = envInt('BENCH_OTEL_QUEUE', 64);
const PACE_MS = envInt('BENCH_OTEL_PACE_MS', 0, 0);
const TARGET = 1.15;

const script: ScriptFunction = (context) =>
  context.step <= STEPS
    ? {
        text: `step ${context.step}: looking it up. `.repeat(8),
        toolCalls: [
          { name: 'echo', arguments: { text: `a${context.step}` } },
          { name: 'echo', arguments: { text: `b${context.step}` } },
        ],
        usage: { inputTokens: 100 * context.step, outputTokens: 30 },
      }
    : { text: 'All done. '.repeat(20), usage: { inputTokens: 100 * context.step, outputTokens: 40 } };

const echo = defineTool({ name: 'echo', description: 'Echoes its text.', input: z.object({ text: z.string() }), permission: 'read', execute: ({ text }) => text });

/** A collector that takes every request and answers 200 at once, or (`stalled`) never answers. */
async function collector(stalled: boolean): Promise<{ url: string; requests: () => number; close(): Promise<void> }> {
  const held: ServerResponse[] = [];
  let requests = 0;
  const server = createServer((request, response) => {
    requests++;
    request.resume();
    if (stalled) held.push(response);
    else request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    async close() {
      for (const response of held.splice(0)) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A port that was free a moment ago: nothing listens there. */
async function deadEndpoint(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

interface Rig {
  readonly name: string;
  readonly harness: Harness;
  readonly dir: string;
  readonly session: AgentSession;
  readonly turnMs: number[];
  readonly turnCpuUs: number[];
}

async function rig(name: string, endpoint: string | undefined): Promise<Rig> {
  const plugins = endpoint === undefined ? [] : [{ plugin: otelPlugin, config: { endpoint, maxQueueSize: QUEUE, scheduledDelayMs: 50, exportTimeoutMs: 30_000, shutdownTimeoutMs: 200 } }];
  // Journals in memory (/dev/shm) where there is one: the fsync of every tool call's checkpoint on a
  // shared disk is noise far larger than what is measured here.
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'harness-bench-otel-'));
  const harness = await createHarness({ dataDir: join(dir, 'data'), config: { defaults: { provider: 'scripted', model: 'test' }, plugins: [scriptedModel(script, { paceMs: PACE_MS }), ...plugins] } });
  harness.ctx.tools.register(echo);
  return { name, harness, dir, session: await harness.createSession({ cwd: dir }), turnMs: [], turnCpuUs: [] };
}

async function turn(r: Rig): Promise<void> {
  const { wallMs, cpuUs, value: end } = await measureCpuAsync(() => r.session.runToEnd('Look everything up.', { approve: () => 'allow' }));
  r.turnMs.push(wallMs);
  r.turnCpuUs.push(cpuUs);
  if (end.data.reason !== 'completed') throw new Error(`${r.name}: the turn ended ${end.data.reason}`);
}

export async function run(): Promise<BenchResult> {
  const healthy = await collector(false);
  const stalled = await collector(true);
  const dead = await deadEndpoint();
  // A second harness without the plugin measures the noise of this run (same turn, same machine).
  const rigs = [
    await rig('without the plugin', undefined),
    await rig('collector up', healthy.url),
    await rig('collector stalled', stalled.url),
    await rig('collector down', dead),
    await rig('without the plugin, again', undefined),
  ];
  const [base, up, stall, down, again] = rigs as [Rig, Rig, Rig, Rig, Rig];
  let stats: { up?: SpanStats; stalled?: SpanStats; down?: SpanStats } = {};
  try {
    for (const r of rigs) await turn(r); // warm-up
    for (const r of rigs) {
      r.turnMs.length = 0;
      r.turnCpuUs.length = 0;
    }
    for (let i = 0; i < REPETITIONS; i++) for (const r of i % 2 === 0 ? rigs : [...rigs].reverse()) await turn(r);
    stats = { up: up.harness.ctx.otel!.stats(), stalled: stall.harness.ctx.otel!.stats(), down: down.harness.ctx.otel!.stats() };
  } finally {
    for (const r of rigs) {
      await r.harness.dispose();
      rmSync(r.dir, { recursive: true, force: true });
    }
    await stalled.close();
    await healthy.close();
  }
  const ratios = (r: Rig, to: Rig = base) => stat(r.turnMs.map((ms, i) => ms / to.turnMs[i]!));
  const stallRatio = ratios(stall, up);
  const downRatio = ratios(down, up);
  const noise = ratios(again);
  const spansPerTurn = 1 + (STEPS + 1) + (STEPS + 1) + 2 * STEPS;
  const ms = (values: number[]) => `${round(median(values))} ms (${round(Math.min(...values))}–${round(Math.max(...values))})`;
  return {
    name: 'otel',
    summary: `a scripted turn of ${STEPS + 1} steps and ${2 * STEPS} tool calls (${spansPerTurn} spans) with the otel plugin exporting to a stalled or a dead collector on 127.0.0.1, against the same turn without the plugin, interleaved; the plugin's queue holds ${QUEUE} spans`,
    tables: [
      {
        title: `turn wall time (median of ${REPETITIONS}, min–max) and what became of the spans`,
        rows: [
          { harness: base.name, turn: ms(base.turnMs), exported: '—', dropped: '—', failed: '—' },
          { harness: up.name, turn: ms(up.turnMs), exported: stats.up?.exportedSpanCount ?? 0, dropped: stats.up?.droppedSpanCount ?? 0, failed: stats.up?.failedSpanCount ?? 0 },
          { harness: stall.name, turn: ms(stall.turnMs), exported: stats.stalled?.exportedSpanCount ?? 0, dropped: stats.stalled?.droppedSpanCount ?? 0, failed: stats.stalled?.failedSpanCount ?? 0 },
          { harness: down.name, turn: ms(down.turnMs), exported: stats.down?.exportedSpanCount ?? 0, dropped: stats.down?.droppedSpanCount ?? 0, failed: stats.down?.failedSpanCount ?? 0 },
          { harness: again.name, turn: ms(again.turnMs), exported: '—', dropped: '—', failed: '—' },
        ],
      },
    ],
    targets: [
      check('turn time, collector stalled ÷ collector up', ratioSpread(stallRatio), `≤ ${TARGET}`, stallRatio.median <= TARGET),
      check('turn time, collector down ÷ collector up', ratioSpread(downRatio), `≤ ${TARGET}`, downRatio.median <= TARGET),
      check('turn time, collector stalled ÷ no plugin', ratioSpread(ratios(stall)), '— (informational)', null),
      check('turn time, collector down ÷ no plugin', ratioSpread(ratios(down)), '— (informational)', null),
      check('turn time, collector up ÷ no plugin (the cost of tracing itself)', ratioSpread(ratios(up)), '— (informational)', null),
      check('noise: no plugin ÷ no plugin (a second harness)', ratioSpread(noise), '— (the noise of this run)', null),
      check('process CPU during the turn, collector up ÷ no plugin', ratioSpread(stat(up.turnCpuUs.map((us, i) => us / base.turnCpuUs[i]!))), '— (the plugin’s own work)', null),
      check('spans dropped (queue full), collector stalled', String(stats.stalled?.droppedSpanCount ?? 0), '> 0 and counted', (stats.stalled?.droppedSpanCount ?? 0) > 0),
      check('spans dropped + failed, collector down', `${stats.down?.droppedSpanCount ?? 0} + ${stats.down?.failedSpanCount ?? 0}`, '— (counted)', null),
    ],
    notes: [
      'the scripted model answers at once, so the turn is CPU-bound and the span work itself shows in the no-plugin ratios; with a real model (hundreds of ms a call) it is a small fraction',
      `the stalled collector received ${stalled.requests()} export request(s) and answered none`,
      'ending a span only queues it (BatchSpanProcessor); export runs on its own timer, so the turn never waits for the collector',
    ],
  };
}

if (isMain(import.meta.url)) printResult(await run());
