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
}

async function measure(withSignal: boolean): Promise<Report> {
  const harness = await createTestHarness({ script: [{ text: 'ok' }] });
  const parent = new AbortController();
  const points: Report['points'] = [];
  try {
    const session = await harness.createSession();
    for (let turn = 1; turn <= TURNS; turn++) {
      for await (const _ of session.run('go', withSignal ? { signal: parent.signal } : {}));
      if (turn === EARLY || turn === TURNS || turn % 2500 === 0) {
        collectGarbage();
        points.push({ turns: turn, listeners: getEventListeners(parent.signal, 'abort').length, heapUsedMiB: round(process.memoryUsage().heapUsed / 2 ** 20) });
      }
    }
    await session.close();
  } finally {
    await harness.dispose();
  }
  return { points };
}

export async function run(): Promise<BenchResult> {
  const child = (mode: string) => inChild<Report>(import.meta.url, ['--child', mode], { nodeArgs: ['--expose-gc'], timeoutMs: 1_800_000 });
  const without = await child('without');
  const withSignal = await child('with');
  const early = withSignal.points.find((p) => p.turns === EARLY)!;
  const last = withSignal.points.at(-1)!;
  const base = without.points.at(-1)!;
  const heapRatio = last.heapUsedMiB / base.heapUsedMiB;
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
    ],
    notes: ['the session itself grows with its history (every turn adds two messages) in both runs alike; the ratio isolates the signal path'],
  };
}

if (isMain(import.meta.url)) {
  if (process.argv[2] === '--child') {
    answer(await measure(process.argv[3] === 'with'));
    process.exit(0);
  } else printResult(await run());
}
