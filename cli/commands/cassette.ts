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
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatCassetteReport, runCassette } from '../../plugins/llm-replay/rerun.ts';
import { exportSession, importJournal, type JournalStore } from '../../runtime/index.ts';
import { defaultConfig } from '../../stack/index.ts';
import { configSource, type Io } from '../env.ts';
import { printable } from '../format.ts';
import { openHarnessForReading, sessionRef, type GlobalOptions } from '../setup.ts';

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
  // A session of another store runs from its exported journal; an --update fork goes back into that store.
  let exported: { dir: string; store: JournalStore } | undefined;
  try {
    const ref = await sessionRef(session, reading);
    if (reading.store.kind === 'file') path = ref;
    else {
      const dir = mkdtempSync(join(tmpdir(), 'harness-cassette-'));
      exported = { dir, store: reading.store };
      path = join(dir, `${ref}.jsonl`);
      const fd = openSync(path, 'wx', 0o600);
      try {
        await exportSession(reading.store, ref, (text) => {
          writeSync(fd, text);
        });
      } finally {
        closeSync(fd);
      }
    }
  } catch (error) {
    await reading.dispose();
    if (exported) rmSync(exported.dir, { recursive: true, force: true });
    throw error;
  }
  if (exported === undefined) {
    await reading.dispose();
    return rerunCassette(path, options, globals, io, { dataDir });
  }
  try {
    return await rerunCassette(path, options, globals, io, { dataDir: join(exported.dir, 'data'), store: exported.store });
  } finally {
    await reading.dispose();
    rmSync(exported.dir, { recursive: true, force: true });
  }
}

async function rerunCassette(path: string, options: CassetteOptions, globals: GlobalOptions, io: Io, target: { dataDir: string; store?: JournalStore }): Promise<number> {
  const dataDir = target.dataDir;
  let report = await runCassette(path, {
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
  if (report.fork && target.store) {
    const imported = await importJournal(report.fork.path, { store: target.store });
    report = { ...report, fork: { id: imported.header.id, path: imported.location } };
  }
  io.out.write(`${formatCassetteReport(report, io.c, printable)}\n`);
  if (options.update && report.same) io.out.write(`${io.c.dim('nothing to update: the re-run matches the recording')}\n`);
  return report.same ? 0 : 1;
}
