/**
 * A real PostgreSQL server for the tests and benches: Debian's `postgresql` package (`.ci/run`
 * installs it): `/usr/lib/postgresql/<v>/bin`, else `initdb` on the PATH. A fresh cluster lives in a
 * temp directory on 127.0.0.1 at a free port. PostgreSQL refuses to run as root: as root, the cluster
 * runs as the `postgres` user the package creates.
 *
 * - `startPostgres()` is what a test file calls: it gets databases of its own in the one cluster the
 *   vitest run shares (started on first use by test/support/postgres-setup.ts, the globalSetup, and
 *   stopped when the run ends). Its `url` is a fresh database; `createDatabase(name)` makes more (the
 *   name gets a unique suffix); `stop()` drops them. Outside vitest's globalSetup (a config without
 *   it) the file starts a cluster of its own, with the same interface.
 * - `startCluster()` starts a cluster and hands it over (the globalSetup and `npm run bench` use it).
 *
 * `fsync=off` unless asked (tests kill writers, never the server).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's Postgres broker (test/support/postgres-setup.ts): `http://127.0.0.1:<port>`. */
    harnessPostgresBroker?: string;
  }
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return join(root, versions[0], 'bin');
  }
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return join(which.stdout.trim(), '..');
  throw new Error('PostgreSQL is not installed: `apt-get install -y postgresql` (.ci/run does it).');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** A running cluster. */
export interface PostgresCluster {
  /** `postgres://harness@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  /** Creates the database `name` (exactly that name); its URL. */
  createDatabase(name: string): Promise<string>;
  /** Drops the database `name`, closing its connections (PostgreSQL 13+ `WITH (FORCE)`). */
  dropDatabase(name: string): Promise<void>;
  stop(): Promise<void>;
}

/** What a test file gets: databases of its own. */
export interface TestPostgres {
  /** A fresh database of this file's: `postgres://harness@127.0.0.1:<port>/<name>` */
  readonly url: string;
  readonly port: number;
  /** Another fresh database, named `name` plus a unique suffix; its URL. */
  createDatabase(name: string): Promise<string>;
  /** Drops this file's databases (the shared cluster keeps running), or stops its own cluster. */
  stop(): Promise<void>;
}

async function onAdmin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Starts a cluster (about a second; more under load). `max_connections` 400: several test files share it. */
export async function startCluster(options: { fsync?: boolean } = {}): Promise<PostgresCluster> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'harness-pg-'));
  const data = join(dir, 'data');
  let ids: { uid: number; gid: number } | undefined;
  if (process.getuid?.() === 0) {
    const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    if (!Number.isInteger(uid) || uid <= 0) throw new Error('Running as root needs the postgres user (the postgresql package creates it).');
    ids = { uid, gid };
    chownSync(dir, uid, gid);
  }
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'harness', '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C'], { encoding: 'utf8', timeout: 120_000, ...(ids ?? {}) });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const server: ChildProcess = spawn(
    join(bin, 'postgres'),
    ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', `fsync=${options.fsync ? 'on' : 'off'}`, '-c', 'max_connections=400', '-c', 'shared_buffers=32MB'],
    { stdio: ['ignore', 'ignore', 'pipe'], ...(ids ?? {}) },
  );
  let log = '';
  server.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const url = `postgres://harness@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (server.exitCode !== null || Date.now() > deadline) {
        server.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`PostgreSQL did not start: ${(error as Error).message}\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    port,
    async createDatabase(name) {
      await onAdmin(url, (client) => client.query(`CREATE DATABASE "${name}"`));
      return `postgres://harness@127.0.0.1:${port}/${name}`;
    },
    async dropDatabase(name) {
      await onAdmin(url, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
    async stop() {
      if (server.exitCode === null) {
        server.kill('SIGINT'); // fast shutdown
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (server.exitCode === null) server.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let counter = 0;
/** `name` made unique in the shared cluster: files in parallel workers ask for the same names. */
function uniqueName(name: string): string {
  const safe = name
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 30);
  return `${safe}_${process.pid}_${++counter}_${Math.random().toString(36).slice(2, 8)}`;
}

async function brokerUrl(): Promise<string | undefined> {
  try {
    const { inject } = await import('vitest');
    return inject('harnessPostgresBroker');
  } catch {
    return undefined; // not in a vitest worker
  }
}

async function ask(broker: string, path: string, name: string): Promise<{ url: string; port: number }> {
  const response = await fetch(`${broker}${path}?name=${encodeURIComponent(name)}`, { method: 'POST' });
  const body = (await response.json()) as { url?: string; port?: number; error?: string };
  if (!response.ok || body.error) throw new Error(body.error ?? `PostgreSQL broker: HTTP ${response.status}`);
  return { url: body.url ?? '', port: body.port ?? 0 };
}

/**
 * Databases of this test file's: in the run's shared cluster when the globalSetup runs (vitest.config.ts),
 * else in a cluster of its own. The first call of a run starts the cluster (hook timeouts of 120 s are safe).
 */
export async function startPostgres(): Promise<TestPostgres> {
  const broker = await brokerUrl();
  if (broker === undefined) {
    const cluster = await startCluster();
    const first = await cluster.createDatabase(uniqueName('test'));
    return {
      url: first,
      port: cluster.port,
      createDatabase: (name) => cluster.createDatabase(uniqueName(name)),
      stop: () => cluster.stop(),
    };
  }
  const names: string[] = [];
  const create = async (name: string): Promise<{ url: string; port: number }> => {
    const unique = uniqueName(name);
    names.push(unique);
    return ask(broker, '/create', unique);
  };
  const first = await create('test');
  let stopped = false;
  return {
    url: first.url,
    port: first.port,
    createDatabase: async (name) => (await create(name)).url,
    async stop() {
      if (stopped) return;
      stopped = true;
      for (const name of names) await ask(broker, '/drop', name).catch(() => undefined);
    },
  };
}
