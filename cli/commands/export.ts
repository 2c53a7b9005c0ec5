/**
 * `harness export <session> [-o file]` and `harness import harness <file>`: moving sessions between
 * stores (issue 18). A session leaves a store as its JSONL journal — the lines the file store
 * holds, byte for byte, whatever store it is in — and comes back in verbatim under its own id, so
 * export → import → export is byte-equal. The store is `--store`, else the config's `store`, else
 * the file store of the data directory. `harness export <session> --otel [endpoint]` sends the
 * session's OpenTelemetry spans and GenAI metrics instead (plugins/otel, issue 21), built from the
 * journal with its recorded times, its subagent sessions' spans under the calls that ran them.
 */
import { closeSync, fsyncSync, linkSync, openSync, rmSync, writeSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { exportSession, HarnessError, importJournal, readJournal, readJournalHeader, storeSource } from '../../runtime/index.ts';
import { shellQuote, writeAll, type Io } from '../env.ts';
import { printable } from '../format.ts';
import { openHarnessForReading, selfWithGlobals, sessionRef, statOf, type GlobalOptions } from '../setup.ts';

/** Options of `harness export`. */
export interface ExportOptions {
  /** `-o, --output <file>`: write the journal there (refused when the file exists) instead of stdout. */
  readonly output?: string;
  /** `--otel [endpoint]`: send the session's spans over OTLP/HTTP (`true`: the OTEL_EXPORTER_OTLP_* variables, else localhost:4318). */
  readonly otel?: string | true;
  /** `--capture-content` (with --otel): prompts, completions, tool arguments and results too. */
  readonly captureContent?: boolean;
}

/**
 * Writes the session's journal as JSONL to stdout, or to `--output` (written whole under a
 * temporary name, synced, then linked into place: a reader never sees half a journal, and an
 * existing file is never overwritten). With `-o`, one `exported` line on stderr.
 * @throws HarnessError `JOURNAL_NOT_FOUND`, `AMBIGUOUS_SESSION`, the reader's `JOURNAL_*` errors
 *   (checked before anything is written), `OUTPUT_EXISTS`, `OUTPUT_FOLDER_NOT_FOUND` (the target's folder
 *   is missing), `OUTPUT_NOT_WRITABLE`.
 */
export async function exportCommand(session: string, options: ExportOptions, globals: GlobalOptions, io: Io): Promise<number> {
  if (options.otel !== undefined && options.output !== undefined) {
    throw new HarnessError('INVALID_ARGUMENTS', '--otel sends spans to a collector and -o writes the journal to a file: use one of them.');
  }
  if (options.captureContent && options.otel === undefined) throw new HarnessError('INVALID_ARGUMENTS', '--capture-content only goes with --otel [endpoint].');
  const harness = await openHarnessForReading(globals, io);
  try {
    const ref = await sessionRef(session, harness);
    if (options.otel !== undefined) return await exportOtel(harness, ref, options, io);
    if (options.output === undefined) {
      await exportSession(harness.store, ref, (text) => writeAll(io.out, text));
      return 0;
    }
    const target = resolve(options.output);
    if (statOf(target) !== undefined) {
      throw new HarnessError('OUTPUT_EXISTS', `${target} exists; export into a new file (it is never overwritten), or to stdout without -o.`, { details: { path: target } });
    }
    const partial = `${target}.partial-${process.pid}`;
    let fd: number;
    try {
      fd = openSync(partial, 'wx', 0o600);
    } catch (error) {
      throw outputError(error, target);
    }
    let result: Awaited<ReturnType<typeof exportSession>>;
    try {
      result = await exportSession(harness.store, ref, (text) => {
        writeSync(fd, text);
      });
      fsyncSync(fd);
      closeSync(fd);
      try {
        linkSync(partial, target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
          throw new HarnessError('OUTPUT_EXISTS', `${target} appeared while the session was exported; it was left as it is.`, { details: { path: target } });
        }
        throw error;
      }
    } finally {
      try {
        closeSync(fd);
      } catch {
        // closed above
      }
      rmSync(partial, { force: true });
    }
    io.err.write(`${io.c.green('exported')} ${printable(result.header.id)} (${result.lastSeq} events) → ${printable(target)}\n`);
    if (result.tornTail) io.err.write(io.c.yellow(`warning: left out a torn last line (line ${result.tornTail.lineNumber}: ${printable(result.tornTail.reason)})\n`));
    return 0;
  } finally {
    await harness.dispose();
  }
}

/**
 * Why `-o target` cannot be written, naming the target (not the temporary `.partial-<pid>` next to
 * it) and the fix; another error as it is.
 */
function outputError(error: unknown, target: string): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  const folder = dirname(target);
  const details = { path: target, folder };
  if (code === 'ENOENT')
    return new HarnessError('OUTPUT_FOLDER_NOT_FOUND', `Cannot write ${target}: the folder ${folder} does not exist; create it (mkdir -p ${shellQuote(folder)}) or export into an existing folder.`, {
      details,
      cause: error,
    });
  if (code === 'ENOTDIR') return new HarnessError('OUTPUT_FOLDER_NOT_FOUND', `Cannot write ${target}: a part of ${folder} is a file, not a folder; export into a folder.`, { details, cause: error });
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS')
    return new HarnessError('OUTPUT_NOT_WRITABLE', `Cannot write ${target}: the folder ${folder} is not writable (${code}); export into a folder you can write to, or to stdout without -o.`, {
      details,
      cause: error,
    });
  return error;
}

/**
 * `--otel [endpoint]`: the session's spans (and metrics) through the otel plugin's SessionTracer,
 * one `exported` line on stdout.
 * @throws HarnessError `INVALID_ARGUMENTS` (an endpoint that is not an http(s) URL),
 *   `OTEL_EXPORT_FAILED` (spans the collector did not take: down, refusing, too slow).
 */
async function exportOtel(harness: Awaited<ReturnType<typeof openHarnessForReading>>, ref: string, options: ExportOptions, io: Io): Promise<number> {
  const endpoint = options.otel === true ? undefined : options.otel;
  if (endpoint !== undefined && !/^https?:\/\/[^\s/]+/.test(endpoint)) {
    throw new HarnessError('INVALID_ARGUMENTS', `--otel ${JSON.stringify(printable(endpoint))} is not an OTLP/HTTP endpoint; give its base URL, e.g. http://127.0.0.1:4318.`);
  }
  const { exportJournalTraces } = await import('../../plugins/otel/export.ts');
  const file = harness.store.kind === 'file';
  const id = file ? (await readJournalHeader(ref)).id : ref;
  const report = await exportJournalTraces(id, readJournal(file ? ref : storeSource(harness.store, ref)), {
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(options.captureContent ? { captureContent: true } : {}),
    store: harness.store,
  });
  const lost = report.droppedSpanCount + report.failedSpanCount;
  if (lost > 0 || !report.complete || (report.exportedSpanCount === 0 && report.turnCount > 0)) {
    throw new HarnessError(
      'OTEL_EXPORT_FAILED',
      `Session ${id}: ${report.exportedSpanCount} span(s) reached ${report.url}, ${lost} did not${report.complete ? '' : ' (the export timed out)'}. Is the collector running there? --otel <endpoint> or OTEL_EXPORTER_OTLP_ENDPOINT names another.`,
      { details: { sessionId: id, url: report.url, exportedSpanCount: report.exportedSpanCount, droppedSpanCount: report.droppedSpanCount, failedSpanCount: report.failedSpanCount } },
    );
  }
  const children = report.sessionCount > 1 ? ` (with ${report.sessionCount - 1} subagent session(s))` : '';
  io.out.write(`${io.c.green('exported')} ${printable(id)}: ${report.exportedSpanCount} spans of ${report.turnCount} turn(s)${children} → ${printable(report.url)}\n`);
  return 0;
}

/**
 * Loads a Harness JSONL journal into the store under its header's id, verbatim (an interrupted
 * turn stays open: the next resume repairs it). The file is checked whole first.
 * @throws HarnessError `FILE_NOT_FOUND`, `NOT_A_JOURNAL_FILE`, `JOURNAL_HEADER`, `JOURNAL_VERSION`,
 *   `JOURNAL_CORRUPT`, `UNKNOWN_EVENT_TYPE`, `JOURNAL_EXISTS` (that id is already in the store).
 */
export async function importHarnessCommand(file: string, globals: GlobalOptions, io: Io): Promise<number> {
  const path = resolve(file);
  const info = statOf(path);
  if (info === undefined) throw new HarnessError('FILE_NOT_FOUND', `No file at ${path}; give the path of a Harness journal (.jsonl, e.g. from harness export).`, { details: { path } });
  if (info.isDirectory()) throw new HarnessError('NOT_A_JOURNAL_FILE', `${path} is a directory; give the path of a Harness journal (.jsonl).`, { details: { path } });
  const harness = await openHarnessForReading(globals, io);
  try {
    let imported: Awaited<ReturnType<typeof importJournal>>;
    try {
      imported = await importJournal(path, { store: harness.store });
    } catch (error) {
      if (HarnessError.is(error) && error.code === 'JOURNAL_EXISTS') {
        throw new HarnessError('JOURNAL_EXISTS', `${error.message} An import keeps the journal's id (so export and import round-trip byte for byte).`, {
          cause: error,
          details: { ...error.failure, verbatim: true },
        });
      }
      throw error;
    }
    const { c } = io;
    io.out.write(`${c.green('imported')} ${printable(file)} → ${c.bold(imported.header.id)} (${imported.lastSeq} events)\n`);
    if (imported.tornTail) io.err.write(c.yellow(`warning: left out a torn last line (line ${imported.tornTail.lineNumber}: ${printable(imported.tornTail.reason)})\n`));
    io.out.write(`${c.dim('journal')} ${printable(imported.location)}\n${c.dim('replay ')} ${selfWithGlobals(globals)} replay ${imported.header.id}\n`);
    return 0;
  } finally {
    await harness.dispose();
  }
}
