/**
 * Abort-signal bookkeeping benchmark (issue #16, item 9a), `npm run bench -- abort`: one session
 * runs 10,000 turns, every turn given the same long-lived caller signal (`run(input, { signal })`,
 * as a server or a chat loop does). Each turn links that signal to its own controller by a listener
 * that must be removed at turn end. Read at checkpoints: the abort listeners on the long-lived
 * signal (`events.getEventListeners`) and heap used after a full GC.
 *
 * Reported: the listener count after 10,000 turns against after 100 (target: equal — flat), and
 * heap used after 10,000 turns with the signal ÷ the same 10,000 turns without one (a second child
 * process, the baseline): what the signal path keeps per turn beyond the session's own growth.
 * Also (informational) the process CPU per turn of the last 100 turns ÷ turns 201-300: the scripted
 * model reads its whole request, so some growth with the history is the model's, not the runtime's
 * (test/agent/turn-scaling.test.ts holds the runtime's own to ≤ 1.5x).
 */
import { getEventListeners } from 'node:events';
import { createTestHarness } from '../testing/index.ts';
import { answer, check, collectGarbage, envInt, inChild, isMain, printResult, round, type BenchResult } from './support.ts';

const TURNS = envInt('BENCH_ABORT_TURNS', 10_000);
const EARLY = 100;
/** Heap with the signal ÷ without, after all turns. */
const TARGET = 1.1;

interface Report {
  readonly points: { turns: number; listeners: number; heapUsedMiB: number }[];
  /** Process CPU µs per turn: turns 201-300 and the last 100. */
  readonly cpuPerTurnUs: { readonly early: number; readonly late: number };
  readonly wallS: number;
}

/** The CPU windows: turns (from, to]. */
const EARLY_WINDOW = [200, 300] as const;
const WINDOW = 100;

async function measure(withSignal: boolean): Promise<Report> {
  const harness = await createTestHarness({ script: [{ text: 'ok' }] });
  const parent = new AbortController();
  const points: Report['points'] = [];
  const cpu = { early: 0, late: 0 };
  const started = performance.now();
  try {
    const session = await harness.createSession();
    for (let turn = 1; turn <= TURNS; turn++) {
      const before = process.cpuUsage();
      for await (const _ of session.run('go', withSignal ? { signal: parent.signal } : {}));
      const used = process.cpuUsage(before);
      if (turn > EARLY_WINDOW[0] && turn <= EARLY_WINDOW[1]) cpu.early += used.user + used.system;
      if (turn > TURNS - WINDOW) cpu.late += used.user + used.system;
      if (turn === EARLY || turn === TURNS || turn % 2500 === 0) {
        collectGarbage();
        points.push({ turns: turn, listeners: getEventListeners(parent.signal, 'abort').length, heapUsedMiB: round(process.memoryUsage().heapUsed / 2 ** 20) });
      }
    }
    await session.close();
  } finally {
    await harness.dispose();
  }
  return { points, cpuPerTurnUs: { early: cpu.early / (EARLY_WINDOW[1] - EARLY_WINDOW[0]), late: cpu.late / WINDOW }, wallS: (performance.now() - started) / 1000 };
}

export async function run(): Promise<BenchResult> {
  const child = (mode: string) => inChild<Report>(import.meta.url, ['--child', mode], { nodeArgs: ['--expose-gc'], timeoutMs: 1_800_000 });
  const without = await child('without');
  const withSignal = await child('with');
  const early = withSignal.points.find((p) => p.turns === EARLY)!;
  const last = withSignal.points.at(-1)!;
  const base = without.points.at(-1)!;
  const heapRatio = last.heapUsedMiB / base.heapUsedMiB;
  const cpuRatio = (run: Report) => run.cpuPerTurnUs.late / run.cpuPerTurnUs.early;
  const cpuFigure = (run: Report) => `${cpuRatio(run).toFixed(2)}x (${round(run.cpuPerTurnUs.early)} → ${round(run.cpuPerTurnUs.late)} µs)`;
  return {
    name: 'abort',
    summary: `${TURNS} turns of one session, each given the same long-lived caller signal; listeners on it and heap after a full GC, against the same turns without a signal (a second child process)`,
    tables: [
      {
        title: 'checkpoints (with the signal | without)',
        rows: withSignal.points.map((p, i) => ({ turns: p.turns, 'abort listeners': p.listeners, 'heap MiB with signal': p.heapUsedMiB, 'heap MiB without': without.points[i]?.heapUsedMiB ?? '' })),
      },
    ],
    targets: [
      check(`abort listeners on the caller's signal after ${TURNS} turns / after ${EARLY}`, `${last.listeners} / ${early.listeners}`, 'equal (flat)', last.listeners === early.listeners),
      check(`heap after ${TURNS} turns with the signal / without`, `${heapRatio.toFixed(2)}x (${last.heapUsedMiB} / ${base.heapUsedMiB} MiB)`, `≤ ${TARGET}x`, heapRatio <= TARGET),
      check(
        `CPU per turn, the last ${WINDOW} of ${TURNS} turns / turns ${EARLY_WINDOW[0] + 1}-${EARLY_WINDOW[1]} (with the signal)`,
        cpuFigure(withSignal),
        '— (informational: the scripted model reads its whole request)',
        null,
      ),
      check(`CPU per turn, the last ${WINDOW} of ${TURNS} turns / turns ${EARLY_WINDOW[0] + 1}-${EARLY_WINDOW[1]} (without)`, cpuFigure(without), '— (informational)', null),
    ],
    notes: [
      'the session itself grows with its history (every turn adds two messages) in both runs alike; the ratio isolates the signal path',
      `wall time of the ${TURNS} turns: ${round(withSignal.wallS)} s with the signal, ${round(without.wallS)} s without (each turn ends with a checkpoint: an fsync)`,
      "CPU per turn: process CPU of each turn; the scripted model counts the request's user prompts and estimates its tokens from every message, as a provider serialises the whole request, so it grows with the history; the runtime's own CPU per turn is held flat by test/agent/turn-scaling.test.ts",
    ],
  };
}

if (isMain(import.meta.url)) {
  if (process.argv[2] === '--child') {
    answer(await measure(process.argv[3] === 'with'));
    process.exit(0);
  } else printResult(await run());
}
