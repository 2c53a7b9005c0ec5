/**
 * Where journals live: `<dataDir>/sessions/<sessionId>.jsonl` (DESIGN "Sessions and the journal").
 */
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { HarnessError } from '../kernel/errors.ts';

/**
 * The data directory: an explicit one (resolved from the working directory), else `$HARNESS_HOME`,
 * else `~/.harness` — the same rule as `resolveDataDir` in harness.ts, restated here so that the
 * journal modules load without the kernel and plugin host (a crash-test writer or a session lister
 * starts fast).
 */
export function dataDirOf(explicit?: string): string {
  if (explicit !== undefined) return resolve(explicit);
  return harnessHomeDir() ?? join(homedir(), '.harness');
}

/**
 * `$HARNESS_HOME` as a directory, or undefined when it is unset or empty. A leading `~` or `~/` is
 * the home folder (a quoted `HARNESS_HOME="~/x"` reaches us unexpanded by the shell); any other
 * relative path is resolved from the working directory, as a shell path would be.
 */
export function harnessHomeDir(): string | undefined {
  const home = process.env.HARNESS_HOME;
  if (!home) return undefined;
  if (home === '~') return homedir();
  if (home.startsWith('~/')) return join(homedir(), home.slice(2));
  return resolve(home);
}

/** Session ids are file names: letters, digits, `.`, `_`, `-` (no separators), at most 200 chars. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** @throws HarnessError `INVALID_SESSION_ID` when `id` cannot be a journal file name. */
export function assertSessionId(id: string): void {
  if (typeof id !== 'string' || !SESSION_ID.test(id)) {
    throw new HarnessError('INVALID_SESSION_ID', `Session id ${JSON.stringify(id)} cannot name a journal: use letters, digits, ".", "_" or "-" (at most 200).`);
  }
}

export function isSessionId(id: string): boolean {
  return typeof id === 'string' && SESSION_ID.test(id);
}

/** `<dataDir>/sessions`; `dataDir` defaults to `$HARNESS_HOME`, else `~/.harness`. */
export function sessionsDir(dataDir?: string): string {
  return join(dataDirOf(dataDir), 'sessions');
}

/** The journal path of a session id. */
export function journalPath(id: string, dataDir?: string): string {
  assertSessionId(id);
  return join(sessionsDir(dataDir), `${id}.jsonl`);
}

/**
 * A session id → `<dataDir>/sessions/<id>.jsonl`; anything that looks like a path (contains a
 * separator or ends in `.jsonl`) → that path, resolved from the working directory.
 */
export function resolveSessionPath(idOrPath: string, dataDir?: string): string {
  if (typeof idOrPath !== 'string' || idOrPath === '') {
    throw new HarnessError('INVALID_SESSION_ID', 'Give a session id or a journal path.');
  }
  if (isAbsolute(idOrPath) || idOrPath.includes('/') || idOrPath.includes('\\') || idOrPath.endsWith('.jsonl')) {
    const path = resolve(idOrPath);
    assertNotPartial(path);
    return path;
  }
  return journalPath(idOrPath, dataDir);
}

/**
 * Refuses the temporary file of a fork or import (`<journal>.partial-<pid>`): it is never a journal.
 * @throws HarnessError `NOT_A_JOURNAL_FILE`.
 */
export function assertNotPartial(path: string): void {
  if (!PARTIAL_NAME.test(path)) return;
  throw new HarnessError(
    'NOT_A_JOURNAL_FILE',
    `${path} is the unfinished copy of a fork or import that was stopped (a .partial-<pid> file), not a journal; the next fork or import into its folder removes it. Fork or import again to get the session.`,
    { details: { path } },
  );
}

/** `<journal>.partial-<pid>`: a fork or import being written (file-store.ts); never a journal. */
const PARTIAL_NAME = /\.jsonl\.partial-(\d+)$/;

/** The temporary name a fork or import of `path` is written under by process `pid`. */
export const partialPathOf = (path: string, pid: number): string => `${path}.partial-${pid}`;

/** The writer's pid of a `.partial-<pid>` file name, or undefined for any other name. */
export function partialPidOf(name: string): number | undefined {
  const match = PARTIAL_NAME.exec(name);
  return match === null ? undefined : Number(match[1]);
}

export const lockPathOf = (path: string): string => `${path}.lock`;
