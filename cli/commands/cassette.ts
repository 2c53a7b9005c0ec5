/**
 * `harness replay <session> --cassette`: a journal as a regression test of your own stack (DESIGN
 * "Replay"; issue 15). The session is re-run with the config's plugins — middleware, tools, approval
 * policy, compaction, retries — and only the model replaced by the recording, and every request the
 * model would see is compared with the recorded one (see plugins/llm-replay/rerun.ts).
 *
 * `--run-tools <dir>` re-executes the tool calls in a scratch copy of `<dir>` (default: the recorded
 * results are served; tools never touch the workspace). `--inject <call>:<fault>` (repeatable) fails
 * a recorded call on purpose. `--approve <policy>` picks the approval policy. `--update` writes a
 * divergent re-run as a new journal (a fork of the recording) and prints its id; the recording is
 * never modified. Exit 0 only when everything matches.
 */
import { formatCassetteReport, runCassette } from '../../plugins/llm-replay/rerun.ts';
import { defaultConfig } from '../../stack/index.ts';
import { configSource, type Io } from '../env.ts';
import { printable } from '../format.ts';
import { openHarnessForReading, sessionPath, type GlobalOptions } from '../setup.ts';

export interface CassetteOptions {
  readonly runTools?: string;
  readonly inject?: readonly string[];
  readonly update?: boolean;
  readonly approve?: string;
}

export async function cassetteCommand(session: string, options: CassetteOptions, globals: GlobalOptions, io: Io): Promise<number> {
  // The session argument resolves against the config's data directory (as every replay does).
  const reading = await openHarnessForReading(globals, io);
  const dataDir = reading.dataDir;
  let path: string;
  try {
    path = sessionPath(session, dataDir);
  } finally {
    await reading.dispose();
  }
  const report = await runCassette(path, {
    // No config file in the folder: the built-in stack, as every other command.
    config: configSource(globals.config).path ?? defaultConfig(),
    ...(options.runTools !== undefined ? { runTools: options.runTools } : {}),
    ...(options.inject?.length ? { inject: options.inject } : {}),
    ...(options.approve !== undefined ? { approve: options.approve } : {}),
    ...(options.update ? { update: { dataDir } } : {}),
    onDiagnostic: (d) => {
      if (d.level === 'info' && !globals.debug) return;
      if (d.code === 'INVALID_REPLAY_STATE' && !globals.debug) return;
      io.err.write(io.c.dim(`${d.level} ${d.code}: ${printable(d.message.split('\n')[0] ?? '')}\n`));
    },
  });
  io.out.write(`${formatCassetteReport(report, io.c, printable)}\n`);
  if (options.update && report.same) io.out.write(`${io.c.dim('nothing to update: the re-run matches the recording')}\n`);
  return report.same ? 0 : 1;
}
