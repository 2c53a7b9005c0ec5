/**
 * Finding a session without its whole id: a unique prefix of an id (every command that takes a
 * session), the latest session of a workspace (`-c/--continue`), or a picker in a terminal (`-r`
 * with no id).
 */
import { readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { HarnessError, listSessions, type JournalStore, type SessionSummary } from '../runtime/index.ts';
import { isSessionId, sessionsDir } from '../runtime/internal.ts';
import type { Io } from './env.ts';
import { formatAgo, oneLine, padColumns, printable } from './format.ts';

/** How many candidates an ambiguous prefix lists. */
const CANDIDATES_SHOWN = 8;

/**
 * The journal of the one session whose id starts with `prefix`, or undefined when none does.
 * @throws HarnessError `AMBIGUOUS_SESSION` (details.candidates: the ids) when several do.
 */
export function journalOfPrefix(prefix: string, dataDir: string): string | undefined {
  if (!isSessionId(prefix)) return undefined;
  const dir = sessionsDir(dataDir);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  // The ids, then the prefix: 'a1.jsonl' starts with 'a1.', the id 'a1' does not.
  const ids = names
    .filter((name) => name.endsWith('.jsonl'))
    .map((name) => name.slice(0, -'.jsonl'.length))
    .filter((id) => id.startsWith(prefix) && isSessionId(id))
    .sort();
  if (ids.length === 0) return undefined;
  const id = ids.length === 1 ? ids[0]! : baseOf(ids);
  if (id !== undefined) return join(dir, `${id}.jsonl`);
  const shown = ids.slice(0, CANDIDATES_SHOWN).join(', ');
  const more = ids.length > CANDIDATES_SHOWN ? ` and ${ids.length - CANDIDATES_SHOWN} more` : '';
  throw new HarnessError('AMBIGUOUS_SESSION', `"${printable(prefix)}" is the start of ${ids.length} session ids: ${shown}${more}. Give more of the id.`, { details: { prefix, candidates: ids } });
}

/**
 * Of the ids a prefix matches, the one the others derive from (`<id>.update-1` of a cassette
 * update, `<id>.sub1` of a subagent): a prefix names the session, not also its derived copies.
 * Undefined when no one id is the base of all the others.
 */
export function baseOf(ids: readonly string[]): string | undefined {
  const shortest = ids.reduce((a, b) => (b.length < a.length ? b : a));
  return ids.every((id) => id === shortest || id.startsWith(`${shortest}.`)) ? shortest : undefined;
}

/** `~/…` for a path under the home directory. */
export function homeRelative(path: string): string {
  const home = homedir();
  return path === home ? '~' : path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path;
}

/**
 * Where sessions are looked for: a data directory (its file store), or a store. A session found
 * there is named by its journal path in the file store, by its id in another (what `openSession` takes).
 */
export type Sessions = string | JournalStore;

/** Where `sessions` are, for messages. */
function placeOf(sessions: Sessions): string {
  return typeof sessions === 'string' ? `${sessions}/sessions` : sessions.location;
}

/** How a listed session is named to open it (see {@link Sessions}). */
function refOf(summary: SessionSummary, sessions: Sessions): string {
  return typeof sessions === 'string' || sessions.kind === 'file' ? summary.path : summary.id;
}

/** The readable sessions of a workspace (its header's cwd), most recently updated first. */
export async function sessionsOfWorkspace(sessions: Sessions, workspace: string): Promise<SessionSummary[]> {
  const dir = resolve(workspace);
  return (await listSessions(sessions)).filter((s) => s.error === undefined && s.cwd !== undefined && resolve(s.cwd) === dir);
}

/**
 * `-c/--continue`: the journal of the workspace's most recently updated session.
 * @throws HarnessError `NO_SESSION_TO_CONTINUE` when the workspace has none.
 */
export async function latestOfWorkspace(sessions: Sessions, workspace: string): Promise<string> {
  const [latest] = await sessionsOfWorkspace(sessions, workspace);
  if (latest === undefined) {
    throw new HarnessError('NO_SESSION_TO_CONTINUE', `No session of the workspace ${printable(workspace)} in ${placeOf(sessions)}; start one without --continue (or give another with --cwd <dir>).`, {
      details: { workspace },
    });
  }
  return refOf(latest, sessions);
}

/**
 * `-r` with no id in a terminal: a list of the sessions (title, workspace, age, turns), the current
 * workspace's first; resolves to the chosen journal.
 * @throws HarnessError `NO_SESSIONS` when there is none; `NO_SESSION_CHOSEN` on Ctrl-C / Esc.
 */
export async function pickSession(sessions: Sessions, workspace: string, io: Io): Promise<string> {
  const here = resolve(workspace);
  const all = (await listSessions(sessions)).filter((s) => s.error === undefined);
  if (all.length === 0) throw new HarnessError('NO_SESSIONS', `There are no sessions in ${placeOf(sessions)} to resume yet; start one without --resume.`);
  const inHere = (s: SessionSummary) => s.cwd !== undefined && resolve(s.cwd) === here;
  const sorted = [...all.filter(inHere), ...all.filter((s) => !inHere(s))];
  const titleWidth = 40;
  const { default: select } = await import('@inquirer/select');
  const choices = sorted.map((s) => {
    const title = padColumns(oneLine(s.title ?? '(untitled)', titleWidth), titleWidth);
    const where = padColumns(oneLine(homeRelative(s.cwd ?? '—'), 36), 36);
    const turns = `${s.turnCount} turn${s.turnCount === 1 ? '' : 's'}`.padEnd(9);
    return {
      value: refOf(s, sessions),
      name: `${title}  ${where}  ${formatAgo(s.lastUpdateAtMs).padEnd(8)}  ${turns}  ${s.id.slice(0, 8)}`,
      short: `${s.id} · ${oneLine(s.title ?? '(untitled)', 60)}`,
    };
  });
  try {
    return await select({ message: 'Resume which session? (↑/↓, Enter; Esc or Ctrl-C: none)', choices, pageSize: 12, loop: false }, { output: io.out, clearPromptOnDone: false });
  } catch (error) {
    if (error instanceof Error && (error.name === 'ExitPromptError' || error.name === 'AbortPromptError')) {
      throw new HarnessError('NO_SESSION_CHOSEN', 'No session was chosen; nothing was resumed.');
    }
    throw error;
  }
}

/** What `--resume [session]` and `--continue` ask for. */
export interface ResumeChoice {
  /** A session argument, or `true` for `-r` with no id (the picker). */
  readonly resume?: string | boolean;
  readonly continue?: boolean;
}

/**
 * The journal a run or chat resumes, or undefined for a new session: `--continue` → the latest
 * session of the workspace, `-r <session>` → that one (prefixes too), `-r` alone → the picker in a
 * terminal.
 * @throws HarnessError `INVALID_ARGUMENTS` for `-c` with `-r`, or `-r` with no id where there is no terminal.
 */
export async function sessionToResume(
  options: ResumeChoice,
  context: { sessions: Sessions; workspace: string; io: Io; resolveArgument: (argument: string) => string | Promise<string> },
): Promise<string | undefined> {
  if (options.continue && options.resume !== undefined) {
    throw new HarnessError('INVALID_ARGUMENTS', '--continue and --resume cannot be combined: --continue resumes the latest session of the workspace, --resume the one you name.');
  }
  if (options.continue) return latestOfWorkspace(context.sessions, context.workspace);
  if (options.resume === undefined || options.resume === false) return undefined;
  if (typeof options.resume === 'string') return context.resolveArgument(options.resume);
  if (!(process.stdin.isTTY && context.io.interactive)) {
    throw new HarnessError(
      'INVALID_ARGUMENTS',
      '--resume with no session opens a picker, which needs a terminal; name the session (--resume <id or prefix>), or use --continue for the latest of this workspace.',
    );
  }
  return pickSession(context.sessions, context.workspace, context.io);
}
