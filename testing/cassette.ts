/**
 * `expectCassette`: a recorded journal as a regression test of your plugins, for vitest or node:test
 * (DESIGN "Replay"; issue 15).
 *
 * ```ts
 * import { expectCassette } from 'harness-runtime/testing';
 * await expectCassette('test/cassettes/refactor.jsonl', { config: 'harness.config.ts' });
 * ```
 * The session is re-run with the config's plugins and the model replaced by the recording (see
 * `harness-runtime/plugins/llm-replay` `runCassette`); every request the model would see is
 * compared with the recorded one. Offline and deterministic: no key, no network, tools served from
 * the recording unless `runTools` names a workspace to copy.
 */
import { HarnessError } from '../runtime/index.ts';
import { formatCassetteReport, runCassette, type CassetteReport, type RunCassetteOptions } from '../plugins/llm-replay/rerun.ts';

export type { CassetteReport, RunCassetteOptions } from '../plugins/llm-replay/rerun.ts';
export type { Fault } from '../plugins/llm-replay/faults.ts';

/**
 * Re-runs `journalPath` (a journal, or a DeepSeek Harness session file) through `options.config`
 * and resolves with the report when everything matches.
 * @throws HarnessError `CASSETTE_DIVERGED` whose message is the report: each divergence with the
 *   first differing path and both values (`call 2 (turn 1 step 2): system: "…" ≠ "…"`);
 *   `details.divergences` lists them. Also what loading the config or the journal throws.
 */
export async function expectCassette(journalPath: string, options: RunCassetteOptions = {}): Promise<CassetteReport> {
  const report = await runCassette(journalPath, options);
  if (!report.same) {
    throw new HarnessError('CASSETTE_DIVERGED', `The re-run of ${journalPath} diverged from the recording:\n${formatCassetteReport(report)}`, {
      details: { divergences: [...report.divergences] },
    });
  }
  return report;
}
