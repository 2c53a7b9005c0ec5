/**
 * Worker processes for the multi-worker tests (`worker.ts`, one `harness serve` each): start one,
 * call its HTTP API, read what a session's store holds.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { readJournal, storeSource, type AnySessionEvent, type JournalStore } from '../../runtime/index.ts';
import { journalPath } from '../../runtime/internal.ts';
import { openPostgresStore } from '../../plugins/journal-postgres/store.ts';
import { TOKEN } from './support.ts';

export interface WorkerOptions {
  /** The shared data directory (the file store's, unless `store` names another). */
  readonly dataDir: string;
  /** The journal store: a `postgres://` URL (default the data directory's file store). */
  readonly store?: string;
  /** The queue database; without it a turn runs in the worker it was submitted to. */
  readonly queueUrl?: string;
  /** The scripted model's pause between chunks, ms (default 15). */
  readonly paceMs?: number;
}

export interface Worker {
  readonly child: ChildProcess;
  readonly url: string;
  /** Settles when the process has exited. */
  readonly exited: Promise<void>;
}

/** Starts a worker and waits until it listens. */
export function startWorker(options: WorkerOptions): Promise<Worker> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'worker.ts')], {
    env: {
      ...process.env,
      WORKER_DATA_DIR: options.dataDir,
      WORKER_TOKEN: TOKEN,
      ...(options.store ? { WORKER_STORE: options.store } : {}),
      ...(options.queueUrl ? { WORKER_QUEUE_URL: options.queueUrl } : {}),
      ...(options.paceMs !== undefined ? { WORKER_PACE_MS: String(options.paceMs) } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-4000)));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const match = /listening (\S+)/.exec(out);
      if (match) resolve({ child, url: match[1]!, exited });
    });
    child.once('exit', (code, signal) => reject(new Error(`worker exited ${code ?? signal} before it listened: ${err}`)));
  });
}

/** Kills a worker (SIGKILL: no close, no flush) and waits for it to be gone. */
export async function killWorker(worker: Worker): Promise<void> {
  worker.child.kill('SIGKILL');
  await worker.exited;
}

/** One API call with the token; a status that is not 2xx throws (with the answer). */
export async function api(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<any> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = await response.json();
  if (!response.ok) throw Object.assign(new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`), { status: response.status, body: json });
  return json;
}

/** What the store holds of a session (read-only: no repair), for a file data directory or a postgres:// URL. */
export class StoredSessions {
  private constructor(
    private readonly dataDir: string,
    private readonly store: JournalStore | undefined,
  ) {}

  static async open(options: { dataDir: string; store?: string }): Promise<StoredSessions> {
    return new StoredSessions(options.dataDir, options.store ? await openPostgresStore({ url: options.store }) : undefined);
  }

  /** The session's events; a missing session or a non-contiguous seq throws (readJournal checks). */
  async events(id: string): Promise<AnySessionEvent[]> {
    const out: AnySessionEvent[] = [];
    for await (const event of readJournal(this.store ? storeSource(this.store, id) : journalPath(id, this.dataDir))) out.push(event);
    return out;
  }

  async close(): Promise<void> {
    await this.store?.close();
  }
}
