/**
 * Startup (issue 13 item 7): wall time of a cold `harness --help` — a new process, as the installed
 * bin runs it (the built CLI, dist/cli/bin.js, on plain node) — against a bare `node` process that
 * imports the `openai` and `@anthropic-ai/sdk` packages (the floor for any process that talks to a
 * provider). Both run interleaved in the same run; the figure is the median of the per-round ratios.
 * The source checkout's path (`node bin/harness.js --help`, through tsx) is shown for information.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { check, envInt, interleave, ratioSpread, round, spread, stat, type BenchResult } from './support.ts';

const ROOT = resolve(import.meta.dirname, '..');
const ROUNDS = envInt('BENCH_STARTUP_ROUNDS', 15);
const TARGET = 2;

const CONTENDERS = {
  baseline: { label: "node: import('openai') + import('@anthropic-ai/sdk')", args: ['--input-type=module', '-e', "await import('openai'); await import('@anthropic-ai/sdk');"], expect: undefined },
  built: { label: 'harness --help (built: node dist/cli/bin.js)', args: [join(ROOT, 'dist', 'cli', 'bin.js'), '--help'], expect: /Usage: harness/ },
  source: { label: 'harness --help (source checkout: node bin/harness.js, tsx)', args: [join(ROOT, 'bin', 'harness.js'), '--help'], expect: /Usage: harness/ },
} as const;
type Contender = keyof typeof CONTENDERS;

/** One cold start: spawn, wait for exit; wall ms. @throws when the process fails or prints the wrong thing. */
function startOnce(contender: Contender): number {
  const { args, expect } = CONTENDERS[contender];
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  const wallMs = performance.now() - started;
  if (result.status !== 0 || (expect && !expect.test(result.stdout))) {
    throw new Error(`${CONTENDERS[contender].label} failed (exit ${result.status}): ${(result.stderr || result.stdout).slice(0, 500)}`);
  }
  return wallMs;
}

/** Builds dist/ when a source is newer than the last build (the installed package runs dist/). */
function ensureBuilt(): void {
  const build = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--if-stale'], { cwd: ROOT, encoding: 'utf8' });
  if (build.status !== 0 || !existsSync(join(ROOT, 'dist', 'cli', 'bin.js'))) throw new Error(`npm run build failed: ${build.stderr || build.stdout}`);
}

export async function run(): Promise<BenchResult> {
  ensureBuilt();
  const contenders = Object.keys(CONTENDERS) as Contender[];
  for (const contender of contenders) startOnce(contender); // warm the file cache: "cold" is a new process, not a cold disk
  const samples = await interleave(ROUNDS, contenders, (contender) => startOnce(contender));
  const ratios = (contender: Contender) => samples[contender].map((ms, i) => ms / samples.baseline[i]!);
  const built = stat(ratios('built'));
  const source = stat(ratios('source'));
  return {
    name: 'startup',
    summary: `Cold start of \`harness --help\` (a new process, wall time) ÷ a bare \`node\` process importing openai and @anthropic-ai/sdk, ${ROUNDS} interleaved rounds`,
    tables: [
      {
        rows: contenders.map((contender) => ({
          process: CONTENDERS[contender].label,
          'wall ms, median (min–max)': spread(stat(samples[contender])),
          'vs baseline': contender === 'baseline' ? '1.00x' : ratioSpread(stat(ratios(contender))),
        })),
      },
    ],
    targets: [
      check('harness --help cold start / node importing the two SDKs', ratioSpread(built), `≤ ${TARGET.toFixed(2)}x`, built.median <= TARGET),
      check('harness --help from the source checkout (tsx) / the same baseline', ratioSpread(source), '— (informational: the dev path)', null),
    ],
    notes: [
      `baseline median ${round(stat(samples.baseline).median)} ms; the built CLI is what the installed \`harness\` bin runs (bin/harness.js imports dist/cli/bin.js when the package ships no cli/ sources)`,
      'the file cache is warmed by one untimed start of each first: this is process start-up, not disk latency',
    ],
  };
}
