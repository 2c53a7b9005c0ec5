/**
 * Redactor-cost benchmark (issue #16), `npm run bench -- redactor`: turns with a tool that streams
 * its output (40 pieces) and a text answer, journaled, with the process's secret redactor holding
 * 8 known values (keys, vault values: every journaled event, every live output piece and the result
 * are masked) against the same turns with an empty redactor (nothing to mask: the fast path).
 * Interleaved batches in one process; CPU time per turn.
 */
import { defineTool, SecretRedactor } from '../runtime/index.ts';
import { z } from '../runtime/index.ts';
import { createTestHarness, runTurn } from '../testing/index.ts';
import { check, envInt, interleave, measureCpuAsync, printResult, ratio, ratioSpread, round, stat, isMain, type BenchResult } from './support.ts';

const ROUNDS = envInt('BENCH_REDACTOR_ROUNDS', 7);
const TURNS = envInt('BENCH_REDACTOR_TURNS', 60);
const TARGET = 1.15;
const SLOT = Symbol.for('harness.secrets');

export async function run(): Promise<BenchResult> {
  const holder = globalThis as typeof globalThis & { [SLOT]?: SecretRedactor };
  const empty = new SecretRedactor();
  const loaded = new SecretRedactor();
  for (let i = 0; i < 8; i++) loaded.add(`sk-bench-${i}-${'0123456789abcdef'.repeat(2)}`, `BENCH_KEY_${i}`);
  const line = 'compiling module 42 of 120: src/feature/part.ts … ok (sk-b is not a key)\n';
  const tool = defineTool({
    name: 'build',
    description: 'Streams a build log.',
    input: z.object({}),
    permission: 'read',
    async *execute() {
      for (let i = 0; i < 40; i++) yield line;
    },
  });
  const harness = await createTestHarness({ script: [{ toolCalls: [{ name: 'build', arguments: {} }] }, { text: 'The build passed; nothing to report.' }], tools: [tool] });
  try {
    const session = await harness.createSession();
    const turns = async () => {
      for (let i = 0; i < TURNS; i++) await runTurn(session, 'build it');
    };
    holder[SLOT] = empty;
    await turns(); // warm-up
    const samples = await interleave(ROUNDS, ['with', 'without'] as const, async (contender) => {
      holder[SLOT] = contender === 'with' ? loaded : empty;
      return (await measureCpuAsync(turns)).cpuUs / TURNS;
    });
    holder[SLOT] = empty;
    await session.close();
    const ratios = samples.with.map((cpu, i) => cpu / samples.without[i]!);
    const s = stat(ratios);
    return {
      name: 'redactor',
      summary: `CPU per turn (a tool streaming 40 output pieces, then an answer; journaled) with 8 known secret values ÷ with none, ${ROUNDS} interleaved batches of ${TURNS} turns`,
      tables: [
        {
          rows: [
            { redactor: '8 known values', 'CPU us per turn (median)': round(stat(samples.with).median) },
            { redactor: 'empty (baseline)', 'CPU us per turn (median)': round(stat(samples.without).median) },
          ],
        },
      ],
      targets: [check('turn CPU with redaction / without', ratioSpread(s), `≤ ${TARGET}x`, ratio(s.median, 1) <= TARGET)],
      notes: ['the redactor is one native includes per known value per string; live output is also held back at a piece end that could begin a value (SecretStream)'],
    };
  } finally {
    holder[SLOT] = empty;
    await harness.dispose();
  }
}

if (isMain(import.meta.url)) printResult(await run());
