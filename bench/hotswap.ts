/**
 * Hot-swap benchmark (issue #9, 3): 50 concurrent streaming sessions on the scripted provider
 * (llm-scripted, a small pace between chunks so that streams overlap the swaps) while
 * `harness.host.reload('llm-scripted')` runs 200 times back to back.
 *
 * Reported:
 * - failed requests (target 0): a turn that did not end `completed`, or a model call that ended in
 *   `finish{error|aborted}`;
 * - requests that saw a mix of generations (target 0): every adapter instance the plugin registers
 *   is wrapped (by instrumenting `registry.create` of this harness) so that each chunk it yields is
 *   tagged with the registration it came from; an outermost `llm/stream` middleware checks that all
 *   chunks of one call carry one tag (and counts calls that saw an untagged chunk: the seam's own
 *   failure chunks);
 * - swap time p50 / p99 (`plugin/reloaded.swapMs`: the synchronous detach + commit) and reload time
 *   (`reloadMs`: import of the new module generation + setup + swap);
 * - the ratio: session throughput (completed turns per second of the 50 sessions) while reloading,
 *   against the same 50 sessions with no reload, measured before and after in the same run.
 *
 * Runs in a child process (module generations accumulate by design: each reload imports the plugin
 * anew), `npm run bench -- hotswap`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHarness, type Harness } from '../runtime/harness.ts';
import type { PluginReloadedEvent } from '../runtime/kernel/plugin.ts';
import type { GenerateOptions, LlmAdapter, StreamChunk } from '../runtime/llm/index.ts';
import { projectRoot } from '../test/support/fixture-server.ts';
import { answer, check, envInt, inChild, isMain, median, percentile, printResult, ratioSpread, round, stat, type BenchResult } from './support.ts';

const SESSIONS = envInt('BENCH_HOTSWAP_SESSIONS', 50);
const RELOADS = envInt('BENCH_HOTSWAP_RELOADS', 200);
const PACE_MS = envInt('BENCH_HOTSWAP_PACE_MS', 5, 0);
/** Baseline phases: how long the 50 sessions run without reloads. */
const BASELINE_MS = envInt('BENCH_HOTSWAP_BASELINE_MS', 6_000);

/** ~60 chunks per call: a reasoning block and a text block in 8-character fragments. */
const SCRIPT = {
  replies: [
    {
      reply: {
        reasoning: 'The user asked for a status line. I will answer briefly, mention the build state, the journal and the adapter, and keep it to two sentences.',
        text: 'All systems nominal: the build is green, the journal is flushed at every checkpoint, and the adapter is being reloaded under load while this very reply streams.',
      },
    },
  ],
};

interface PhaseReport {
  readonly kind: 'baseline' | 'reloading';
  readonly wallMs: number;
  readonly turns: number;
  readonly calls: number;
  readonly failedTurns: number;
  readonly failedCalls: number;
  readonly mixedCalls: number;
  readonly untaggedCalls: number;
  readonly chunks: number;
  /** Distinct registrations that served calls in this phase. */
  readonly generationsSeen: number;
}

interface ChildReport {
  readonly phases: PhaseReport[];
  readonly swapMs: number[];
  readonly reloadMs: number[];
  readonly reloadFailures: number;
  readonly chunksPerCall: number;
}

/** Tags each chunk with the registration serial of the adapter that yielded it. */
const tags = new WeakMap<object, number>();

function instrument(harness: Harness): void {
  const registry = harness.llm.registry;
  const create = registry.create.bind(registry);
  let serial = 0;
  registry.create = (providers, adapter, owner, register) => {
    const mine = ++serial;
    const wrapped = Object.create(adapter) as LlmAdapter;
    wrapped.stream = (options: GenerateOptions) => tagged(adapter.stream(options), mine);
    return create(providers, wrapped, owner, register);
  };
}

async function* tagged(stream: AsyncIterable<StreamChunk>, serial: number): AsyncGenerator<StreamChunk> {
  for await (const chunk of stream) {
    tags.set(chunk, serial);
    yield chunk;
  }
}

interface Counters {
  calls: number;
  failedCalls: number;
  mixedCalls: number;
  untaggedCalls: number;
  chunks: number;
  serials: Set<number>;
}

function newCounters(): Counters {
  return { calls: 0, failedCalls: 0, mixedCalls: 0, untaggedCalls: 0, chunks: 0, serials: new Set() };
}

async function measure(): Promise<ChildReport> {
  const dir = mkdtempSync(join(tmpdir(), 'harness-bench-hotswap-'));
  const scriptPath = join(dir, 'script.json');
  writeFileSync(scriptPath, JSON.stringify(SCRIPT));
  const harness = await createHarness({
    dataDir: join(dir, 'data'),
    config: {
      defaults: { provider: 'scripted', model: 'bench' },
      plugins: [],
    },
  });
  instrument(harness);
  await harness.host.load({ module: join(projectRoot, 'plugins/llm-scripted/index.ts'), config: { paceMs: PACE_MS, fragmentChars: 8, scripts: { bench: scriptPath } } });
  let counters = newCounters();
  // Outermost middleware: one generation per call.
  harness.ctx.on(
    'llm/stream',
    async function* (request, next) {
      let first: number | undefined;
      let mixed = false;
      let untagged = false;
      let failed = false;
      const phase = counters;
      for await (const chunk of next(request)) {
        phase.chunks++;
        const tag = tags.get(chunk);
        if (tag === undefined) untagged = true;
        else if (first === undefined) first = tag;
        else if (tag !== first) mixed = true;
        if (chunk.type === 'finish' && chunk.finish.kind !== 'stop' && chunk.finish.kind !== 'tool-calls') failed = true;
        yield chunk;
      }
      phase.calls++;
      if (mixed) phase.mixedCalls++;
      if (untagged) phase.untaggedCalls++;
      if (failed) phase.failedCalls++;
      if (first !== undefined) phase.serials.add(first);
    },
    { stage: -1000 },
  );
  const swapMs: number[] = [];
  const reloadMs: number[] = [];
  let reloadFailures = 0;
  harness.kernel.bus.add('plugin/reloaded', (event: PluginReloadedEvent) => {
    swapMs.push(event.swapMs);
    reloadMs.push(event.reloadMs);
  });
  harness.kernel.bus.add('plugin/reload-failed', () => reloadFailures++);
  const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => harness.createSession({ cwd: dir })));

  /** Runs the sessions, turn after turn, until `until` resolves; returns the phase report. */
  const phase = async (kind: PhaseReport['kind'], until: Promise<void>): Promise<PhaseReport> => {
    counters = newCounters();
    let stop = false;
    void until.then(() => (stop = true));
    let turns = 0;
    let failedTurns = 0;
    const started = performance.now();
    await Promise.all(
      sessions.map(async (session, i) => {
        while (!stop) {
          const end = await session.runToEnd(`status ${i}`);
          turns++;
          if (end?.data.reason !== 'completed') failedTurns++;
        }
      }),
    );
    const wallMs = performance.now() - started;
    const c = counters;
    return {
      kind,
      wallMs,
      turns,
      calls: c.calls,
      failedTurns,
      failedCalls: c.failedCalls,
      mixedCalls: c.mixedCalls,
      untaggedCalls: c.untaggedCalls,
      chunks: c.chunks,
      generationsSeen: c.serials.size,
    };
  };
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const phases: PhaseReport[] = [];
  await phase('baseline', sleep(1_000)); // warm-up
  phases.push(await phase('baseline', sleep(BASELINE_MS)));
  phases.push(
    await phase(
      'reloading',
      (async () => {
        for (let i = 0; i < RELOADS; i++) {
          try {
            await harness.host.reload('llm-scripted');
          } catch {
            // counted by plugin/reload-failed
          }
        }
      })(),
    ),
  );
  phases.push(await phase('baseline', sleep(BASELINE_MS)));
  const calls = phases.reduce((sum, p) => sum + p.calls, 0);
  const chunks = phases.reduce((sum, p) => sum + p.chunks, 0);
  await harness.dispose();
  rmSync(dir, { recursive: true, force: true });
  return { phases, swapMs, reloadMs, reloadFailures, chunksPerCall: chunks / Math.max(1, calls) };
}

export async function run(): Promise<BenchResult> {
  const report = await inChild<ChildReport>(import.meta.url, ['--child'], { timeoutMs: 900_000 });
  const reloading = report.phases.find((p) => p.kind === 'reloading')!;
  const baselines = report.phases.filter((p) => p.kind === 'baseline');
  const rate = (p: PhaseReport) => p.turns / (p.wallMs / 1000);
  const baselineRate = median(baselines.map(rate));
  const ratios = baselines.map((b) => rate(reloading) / rate(b));
  const throughput = rate(reloading) / baselineRate;
  const failed = reloading.failedTurns + reloading.failedCalls + baselines.reduce((sum, p) => sum + p.failedTurns + p.failedCalls, 0);
  const mixed = report.phases.reduce((sum, p) => sum + p.mixedCalls, 0);
  const untagged = report.phases.reduce((sum, p) => sum + p.untaggedCalls, 0);
  const ms = (values: number[]) => `p50 ${round(percentile(values, 50))} · p99 ${round(percentile(values, 99))} · max ${round(Math.max(...values))}`;
  const row = (p: PhaseReport, label: string) => ({
    phase: label,
    'wall s': round(p.wallMs / 1000),
    'turns (= calls)': `${p.turns} (${p.calls})`,
    'turns/s': round(rate(p)),
    'failed turns / calls': `${p.failedTurns} / ${p.failedCalls}`,
    'mixed-generation calls': p.mixedCalls,
    'generations that served': p.generationsSeen,
    'ratio to no-reload': p.kind === 'reloading' ? ratioSpread({ ...stat(ratios), median: throughput }) : '—',
  });
  return {
    name: 'hotswap',
    summary: `${SESSIONS} concurrent streaming sessions on llm-scripted while the plugin is reloaded ${RELOADS} times; baseline: the same sessions with no reload, before and after`,
    tables: [
      { rows: [row(baselines[0]!, 'no reload (before)'), row(reloading, `${RELOADS} reloads back to back`), row(baselines[1]!, 'no reload (after)')] },
      {
        title: 'swap and reload times (ms, wall; the swap is one synchronous section)',
        rows: [
          { measure: 'swapMs (detach old + commit new)', value: ms(report.swapMs), reloads: report.swapMs.length },
          { measure: 'reloadMs (import new module generation + setup + swap)', value: ms(report.reloadMs), reloads: report.reloadMs.length },
        ],
      },
    ],
    targets: [
      check('failed requests during the reloads (and around them)', String(failed), '0', failed === 0),
      check('requests that saw a mix of adapter generations', String(mixed), '0', mixed === 0),
      check('reloads that failed', String(report.reloadFailures), '0', report.reloadFailures === 0),
      check('session throughput while reloading / without reloads (turns per second)', ratioSpread({ ...stat(ratios), median: throughput }), '— (informational)', null),
      check('swap time p50 / p99', `${round(percentile(report.swapMs, 50))} / ${round(percentile(report.swapMs, 99))} ms`, '— (no target)', null),
    ],
    notes: [
      `each call streams ~${Math.round(report.chunksPerCall)} chunks (reasoning + text, 8-character fragments, ${PACE_MS} ms pace), so every call overlaps several swaps; each turn = 1 call, journaled (checkpoints before the call and at turn end)`,
      `generation check: every adapter instance registered is wrapped to tag its chunks with its registration; an outermost llm/stream middleware checks one tag per call; calls with an untagged chunk (a seam failure chunk): ${untagged}`,
      'throughput ratio: the median of the two no-reload phases is the baseline; range = against each of them; the reloads cost CPU (each imports the plugin module anew), so some drop is expected — a stall would show as a large one',
      'swap/reload times are wall-clock (performance.now()) on a machine shared with other work',
    ],
  };
}

if (isMain(import.meta.url)) {
  if (process.argv[2] === '--child') {
    answer(await measure());
    process.exit(0);
  } else printResult(await run());
}
