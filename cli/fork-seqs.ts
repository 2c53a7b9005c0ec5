/**
 * Where a session can be forked: at a seq outside every turn and compaction (0 keeps no event). The
 * runtime refuses any other seq with `FORK_INSIDE_TURN`; the CLI's message names the nearest seqs
 * that are allowed and the way to fork there anyway, in the words of the command that was used.
 * On a damaged journal a fork copies only the events before the first damaged line, so no message
 * names a seq past it (`forkableEvents`, `forkPastDamageError`).
 */
import { HarnessError, readJournal, type AnySessionEvent, type LineSource } from '../runtime/index.ts';

/** The nearest seqs ≤ and ≥ `atSeq` where a fork is allowed (`after` absent when the journal ends inside the turn). */
export function forkableAround(events: Iterable<Pick<AnySessionEvent, 'seq' | 'type'>>, atSeq: number): { before: number; after?: number; turnStartSeq?: number } {
  let open = 0;
  let before = 0;
  let turnStartSeq: number | undefined;
  for (const event of events) {
    if (event.type === 'turn/start' || event.type === 'compaction/start') {
      if (open === 0 && event.seq <= atSeq) turnStartSeq = event.seq;
      open++;
    } else if (event.type === 'turn/end' || event.type === 'compaction/end') open = Math.max(0, open - 1);
    if (open > 0) continue;
    if (event.seq <= atSeq) before = event.seq;
    else return { before, after: event.seq, ...(turnStartSeq !== undefined ? { turnStartSeq } : {}) };
    if (event.seq === atSeq) return { before, after: atSeq };
  }
  return { before, ...(turnStartSeq !== undefined ? { turnStartSeq } : {}) };
}

/**
 * The message of a `FORK_INSIDE_TURN` for a person: which seqs are allowed near `atSeq` and how to
 * fork there (`retry(seq)`: `/fork 12`, `harness fork … --at 12`), or where it is and what closes it.
 * `atEnd`: no seq was given, `atSeq` is the session's last event (the message says so).
 */
export async function forkInsideTurnMessage(path: string | LineSource, atSeq: number, how: { session: string; retry: (seq: number) => string; closeTurn?: string; atEnd?: boolean }): Promise<string> {
  const { events, damagedLine } = await forkableEvents(path);
  const { before, after, turnStartSeq } = forkableAround(events, atSeq);
  const where = turnStartSeq !== undefined ? `inside the turn that starts at seq ${turnStartSeq}` : 'inside a turn';
  const noEnd = damagedLine !== undefined ? `the journal is damaged from line ${damagedLine}, before the turn's end` : 'the turn has no end yet';
  const nearest = after !== undefined ? `seq ${before} (before it) or seq ${after} (its end)` : `seq ${before} (before it; ${noEnd})`;
  const tries = [how.retry(before), ...(after !== undefined ? [how.retry(after)] : [])].join(' or ');
  return `Seq ${atSeq} of session ${how.session}${how.atEnd ? ' (its last event)' : ''} is ${where}: a fork there would cut a turn in half. ${after !== undefined ? 'The nearest seqs allowed are' : 'The nearest seq allowed is'} ${nearest}: ${tries}${how.closeTurn ? `; or ${how.closeTurn} to close the turn in the fork with synthetic events` : ''}.`;
}

/** The seq of a journal's last event (0 for none): where `harness fork` without `--at` forks. A torn tail is left out, as a fork leaves it out. */
export async function lastSeqOf(path: string | LineSource): Promise<number> {
  let last = 0;
  for await (const event of readJournal(path)) last = event.seq;
  return last;
}

/**
 * The seqs and types of the events a fork can keep: those before the journal's first damaged line
 * (`damagedLine`), since a fork copies a prefix and refuses to read past damage (`JOURNAL_CORRUPT`).
 * A salvage read goes on past it — to seqs that no fork can reach, so no message may name them.
 */
export async function forkableEvents(path: string | LineSource): Promise<{ events: Pick<AnySessionEvent, 'seq' | 'type'>[]; damagedLine?: number }> {
  const events: Pick<AnySessionEvent, 'seq' | 'type'>[] = [];
  let damagedLine: number | undefined;
  const onSkip = (line: { lineNumber: number; reason: string }): void => {
    // A torn tail (a cut last write, "the last line …") is no damage: a fork leaves it out.
    if (!line.reason.startsWith('the last line') && (damagedLine === undefined || line.lineNumber < damagedLine)) damagedLine = line.lineNumber;
  };
  for await (const event of readJournal(path, { salvage: true, onSkip })) events.push({ seq: event.seq, type: event.type });
  if (damagedLine === undefined) return { events };
  // Up to the first damaged line the lines are whole and contiguous: line n + 1 holds seq n.
  const lastIntact = damagedLine - 2;
  return { events: events.filter((event) => event.seq <= lastIntact), damagedLine };
}

/**
 * A `JOURNAL_CORRUPT` met by `harness fork` (`error`), with the forks that do work: at the last seq
 * outside a turn before the damage, or (`--close-turn`) at the last seq before it. `self` is the
 * command so far (`harness fork <session>`). Any other error is given back as it is.
 */
export async function forkPastDamageError(error: unknown, path: string | LineSource, self: string): Promise<unknown> {
  if (!HarnessError.is(error) || error.code !== 'JOURNAL_CORRUPT') return error;
  const { events, damagedLine } = await forkableEvents(path).catch(() => ({ events: [], damagedLine: undefined }));
  if (damagedLine === undefined) return error;
  const lastIntact = damagedLine - 2;
  const { before } = forkableAround(events, lastIntact);
  const tries =
    before < lastIntact
      ? `\`${self} --at ${before}\` (the last seq outside a turn before it) or \`${self} --at ${lastIntact} --close-turn\` (the last seq before it, its turn closed)`
      : `\`${self} --at ${before}\` (the last seq before it)`;
  return new HarnessError('JOURNAL_CORRUPT', `${error.message} A fork keeps the events before line ${damagedLine}: ${tries}.`, { cause: error, details: { ...error.failure } });
}
