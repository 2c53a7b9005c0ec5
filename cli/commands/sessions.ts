/**
 * `harness sessions`, `harness fork <session> [--at <seq>]`, `harness import dsh <file>`.
 *
 * A session is listed under the id other commands take: its journal file's name. A journal whose
 * header names another session (a copy: `cp <id>.jsonl backup.jsonl`) is flagged with that id.
 */
import { resolve } from 'node:path';
import { forkSession, HarnessError, listSessions, writeImportedSession, type SessionSummary } from '../../runtime/index.ts';
import { selfCommand, shellQuote, type Io } from '../env.ts';
import { homeRelative } from '../find-session.ts';
import { forkInsideTurnMessage, forkPastDamageError, lastSeqOf } from '../fork-seqs.ts';
import { columnsOf, compactCount, formatAgo, oneLine, padColumns, printable } from '../format.ts';
import { openHarnessForReading, selfWithGlobals, sessionArgument, sessionRef, sessionSource, statOf, storeName, type GlobalOptions } from '../setup.ts';

/** A summary as the CLI lists it: `id` is what other commands take; `headerId` when the header says otherwise. */
function listed(summary: SessionSummary, dataDir: string): SessionSummary & { headerId?: string } {
  const id = sessionArgument(summary.path, dataDir);
  return id === summary.id ? summary : { ...summary, id, headerId: summary.id };
}

/**
 * Lists the sessions of the data directory, most recently updated first; `--workspace <dir>` only
 * those whose workspace (header `cwd`) is that directory.
 */
export async function sessionsCommand(options: { json?: boolean; workspace?: string }, globals: GlobalOptions, io: Io): Promise<number> {
  const harness = await openHarnessForReading(globals, io);
  try {
    const workspace = options.workspace === undefined ? undefined : resolve(options.workspace);
    const sessions = (await listSessions(harness.store))
      .filter((s) => workspace === undefined || (s.cwd !== undefined && resolve(s.cwd) === workspace))
      .map((summary) => listed(summary, harness.dataDir));
    if (options.json) {
      for (const session of sessions) io.out.write(`${JSON.stringify(session)}\n`);
      return 0;
    }
    if (sessions.length === 0 && workspace !== undefined) {
      io.out.write(`No sessions of the workspace ${printable(workspace)} in ${storeName(harness)}.\n`);
      return 0;
    }
    if (sessions.length === 0) {
      io.out.write(`No sessions in ${storeName(harness)} yet. Start one with: ${selfCommand()} run "What is in this workspace?"\n`);
      return 0;
    }
    const { c } = io;
    const rows = sessions.map((s) => {
      const title = s.error
        ? c.red(`unreadable — ${printable(s.error.code)}`)
        : oneLine(s.title ?? (s.importedFrom ? `(imported from ${s.importedFrom.format})` : s.parent ? `(fork of ${s.parent.sessionId.slice(0, 8)} at seq ${s.parent.seq})` : '—'), 48);
      const copy = s.headerId !== undefined ? c.yellow(` [copy: its header says session ${oneLine(s.headerId, 60)}]`) : '';
      const tokens = `${compactCount((s.usage.inputTokens ?? 0) + (s.usage.cacheReadTokens ?? 0) + (s.usage.cacheWriteTokens ?? 0))}/${compactCount(s.usage.outputTokens ?? 0)}`;
      const where = s.cwd === undefined ? c.dim('—') : pathTail(oneLine(homeRelative(s.cwd), Number.POSITIVE_INFINITY), 40);
      return [printable(s.id), `${title === '—' ? c.dim(title) : title}${copy}`, where, String(s.turnCount), tokens, formatAgo(s.lastUpdateAtMs)];
    });
    const head = ['ID', 'TITLE', 'WORKSPACE', 'TURNS', 'TOKENS in/out', 'UPDATED'];
    // Terminal columns, not characters: a title in CJK takes two per character.
    const widths = head.map((h, i) => Math.max(columnsOf(h), ...rows.map((r) => columnsOf(r[i]!))));
    const pad = (text: string, i: number) => padColumns(text, widths[i]!);
    io.out.write(`${c.dim(head.map(pad).join('  ').trimEnd())}\n`);
    for (const row of rows) io.out.write(`${row.map(pad).join('  ').trimEnd()}\n`);
    io.out.write(c.dim(`${sessions.length} session${sessions.length === 1 ? '' : 's'}${workspace === undefined ? '' : ` of ${printable(workspace)}`} in ${storeName(harness)}\n`));
    return 0;
  } finally {
    await harness.dispose();
  }
}

/** Starts a new session from the events 1..at of another (without `--at`: all of them, up to its last seq). */
export async function forkCommand(source: string, options: { at?: number; closeTurn?: boolean; id?: string }, globals: GlobalOptions, io: Io): Promise<number> {
  const harness = await openHarnessForReading(globals, io);
  try {
    const path = await sessionRef(source, harness);
    const forkSelf = `${selfWithGlobals(globals)} fork ${shellQuote(source)}`;
    let atSeq = options.at ?? 0;
    let forked: Awaited<ReturnType<typeof forkSession>>;
    try {
      atSeq = options.at ?? (await lastSeqOf(sessionSource(harness, path)));
      forked = await forkSession(path, {
        atSeq,
        store: harness.store,
        bus: harness.kernel.bus,
        ...(options.closeTurn ? { closeOpenTurn: true } : {}),
        ...(options.id ? { id: options.id } : {}),
      });
    } catch (error) {
      // A damaged journal: the forks that work are those before the damage; say which (never a seq past it).
      if (HarnessError.is(error) && error.code === 'JOURNAL_CORRUPT') throw await forkPastDamageError(error, sessionSource(harness, path), forkSelf);
      // The runtime's message is neutral; say it with this command's flags and the nearest seqs allowed.
      if (!HarnessError.is(error) || error.code !== 'FORK_INSIDE_TURN') throw error;
      const message = await forkInsideTurnMessage(sessionSource(harness, path), atSeq, {
        session: String(error.failure.sessionId ?? source),
        retry: (seq) => `\`${forkSelf} --at ${seq}\``,
        ...(options.at === undefined ? { atEnd: true } : {}),
      });
      throw new HarnessError('FORK_INSIDE_TURN', message, { details: { ...error.failure, path } });
    }
    const { journal, repairs } = forked;
    await journal.close();
    const parent = journal.header.parent!;
    const { c } = io;
    io.out.write(`${c.green('forked')} ${parent.sessionId} at seq ${parent.seq} → ${c.bold(journal.id)}\n`);
    if (repairs.syntheticEvents.length) io.out.write(c.dim(`closed the open turn with ${repairs.syntheticEvents.length} synthetic event(s)\n`));
    for (const child of forked.children) io.out.write(`  ${c.green('↳ subagent')} ${printable(child.sourceId)} at seq ${child.atSeq} → ${c.bold(printable(child.id))}\n`);
    const self = selfWithGlobals(globals);
    io.out.write(`${c.dim('journal ')} ${journal.path}\n${c.dim('continue')} ${self} run --resume ${journal.id} "<prompt>"\n${c.dim('replay  ')} ${self} replay ${journal.id}\n`);
    return 0;
  } finally {
    await harness.dispose();
  }
}

/** Imports a DeepSeek Harness session as a journal of ours. */
export async function importDshCommand(file: string, options: { id?: string }, globals: GlobalOptions, io: Io): Promise<number> {
  const harness = await openHarnessForReading(globals, io);
  try {
    const info = statOf(resolve(file));
    if (info === undefined) throw new HarnessError('FILE_NOT_FOUND', `No file at ${resolve(file)}; give the path of a DeepSeek Harness session.jsonl.`, { details: { path: resolve(file) } });
    if (info.isDirectory()) {
      throw new HarnessError('NOT_A_JOURNAL_FILE', `${resolve(file)} is a directory; give the path of a DeepSeek Harness session file (its session.jsonl).`, { details: { path: resolve(file) } });
    }
    const written = await writeImportedSession(file, { store: harness.store, ...(options.id ? { id: options.id } : {}) });
    const { c } = io;
    io.out.write(`${c.green('imported')} ${printable(file)} → ${c.bold(written.header.id)} (${written.eventCount} events)\n`);
    for (const warning of written.imported.warnings) io.err.write(c.yellow(`warning: ${printable(warning)}\n`));
    for (const m of written.imported.assemblerMismatches)
      io.err.write(c.yellow(`warning: seq ${m.seq} (turn ${m.turn}, step ${m.step}): the recorded ${m.field} differs from what its chunks assemble to\n`));
    // Its subagents, imported with it and linked to it (their header's parentSession).
    const children = (list: typeof written.children, indent: string): void => {
      for (const child of list) {
        const link = child.header.parentSession;
        io.out.write(
          `${indent}${c.green('↳ subagent')} ${c.bold(child.header.id)} (${child.eventCount} events${link?.callId ? `, spawned by call ${printable(link.callId)}` : ', spawning call not found'})\n`,
        );
        children(child.children, `${indent}  `);
      }
    };
    children(written.children, '  ');
    io.out.write(`${c.dim('journal')} ${written.path}\n${c.dim('replay ')} ${selfWithGlobals(globals)} replay ${sessionArgument(written.path, harness.dataDir)}\n`);
    return 0;
  } finally {
    await harness.dispose();
  }
}

/** A path cut to `max` characters from the left (`…/cookbook/demo-workspace`): its end names the folder. */
function pathTail(path: string, max: number): string {
  return path.length > max ? `…${path.slice(path.length - max + 1)}` : path;
}
