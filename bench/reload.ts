/**
 * Reload-memory benchmark (issue #16, item 9b), `npm run bench -- reload`: in a fresh child process
 * (`--expose-gc`), a harness with the scripted provider plugin (`plugins/llm-scripted`) is
 * hot-reloaded `harness.host.reload('llm-scripted')` 200 times, one short turn after every reload.
 * RSS and heap used after a full GC are read after 10 reloads (the baseline) and after 200.
 *
 * Reported: RSS after 200 ÷ RSS after 10 (the target), heap after 200 ÷ after 10, and the growth
 * per reload. Each reload imports a new generation of the plugin's modules, and an ES module is
 * never unloaded: some growth per reload is by design, so the target bounds it rather than
 * forbids it (see the notes).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHarness } from '../runtime/harness.ts';
import { projectRoot } from '../test/support/fixture-server.ts';
import { answer, check, collectGarbage, envInt, inChild, isMain, printResult, round, type BenchResult } from './support.ts';

const RELOADS = envInt('BENCH_RELOAD_COUNT', 200);
const BASELINE = 10;
/** RSS after 200 reloads ÷ after 10: at most this (issue 16 measured 2.2x before the store/registry fixes). */
const TARGET = 1.5;

interface Point {
  readonly reloads: number;
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
}

async function measure(): Promise<{ points: Point[]; failures: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-bench-reload-'));
  const harness = await createHarness({
    dataDir,
    config: { defaults: { provider: 'scripted', model: 'scripted-default' }, plugins: [{ module: join(projectRoot, 'plugins/llm-scripted/index.ts') }] },
  });
  const points: Point[] = [];
  let failures = 0;
  const mark = (reloads: number) => {
    collectGarbage();
    collectGarbage();
    const usage = process.memoryUsage();
    points.push({ reloads, rssMiB: round(usage.rss / 2 ** 20), heapUsedMiB: round(usage.heapUsed / 2 ** 20) });
  };
  try {
    const session = await harness.createSession({ cwd: dataDir });
    for (let i = 1; i <= RELOADS; i++) {
      await harness.host.reload('llm-scripted');
      // One call per generation: the new adapter serves, the old one drains and is let go.
      for await (const event of session.run('status?', { approve: () => 'deny' })) {
        if (event.type === 'turn/end' && (event.data as { reason: string }).reason !== 'completed') failures++;
      }
      if (i === BASELINE || i === RELOADS || i % 50 === 0) mark(i);
    }
    await session.close();
  } finally {
    await harness.dispose();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return { points, failures };
}

export async function run(): Promise<BenchResult> {
  const report = await inChild<{ points: Point[]; failures: number }>(import.meta.url, ['--child'], { nodeArgs: ['--expose-gc'], timeoutMs: 900_000 });
  const base = report.points.find((p) => p.reloads === BASELINE)!;
  const last = report.points.at(-1)!;
  const rssRatio = last.rssMiB / base.rssMiB;
  const heapRatio = last.heapUsedMiB / base.heapUsedMiB;
  return {
    name: 'reload',
    summary: `RSS after ${RELOADS} hot reloads of llm-scripted (one turn after each) ÷ RSS after ${BASELINE}, in one child process with a full GC before each reading`,
    tables: [{ title: 'memory after a full GC', rows: report.points.map((p) => ({ reloads: p.reloads, 'RSS MiB': p.rssMiB, 'heap used MiB': p.heapUsedMiB })) }],
    targets: [
      check(`RSS after ${RELOADS} reloads / after ${BASELINE}`, `${rssRatio.toFixed(2)}x (${base.rssMiB} → ${last.rssMiB} MiB)`, `≤ ${TARGET}x`, rssRatio <= TARGET),
      check(`heap used after ${RELOADS} reloads / after ${BASELINE}`, `${heapRatio.toFixed(2)}x (${base.heapUsedMiB} → ${last.heapUsedMiB} MiB)`, '— (informational)', null),
      check('turns that failed across the reloads', String(report.failures), '0', report.failures === 0),
    ],
    notes: [
      `growth per reload: ${round(((last.rssMiB - base.rssMiB) * 1024) / (RELOADS - BASELINE))} KiB RSS, ${round(((last.heapUsedMiB - base.heapUsedMiB) * 1024) / (RELOADS - BASELINE))} KiB heap`,
      `target ≤ ${TARGET}x: every reload imports a new module generation of the plugin and ES modules are never unloaded, so the compiled code of each generation stays (a few hundred KiB for this plugin through tsx); what must not stay is the old generation's adapters, registrations, listeners and caches — that would grow far faster (issue 16 saw 2.2x, 125 → 272 MB)`,
    ],
  };
}

if (isMain(import.meta.url)) {
  if (process.argv[2] === '--child') {
    answer(await measure());
    process.exit(0);
  } else printResult(await run());
}
