/**
 * A real PostgreSQL server for the store tests: a fresh cluster in a temp directory (initdb), on
 * 127.0.0.1 and a free port, started by the test file that needs it and stopped after it. The
 * binaries are Debian's `postgresql` package (`.ci/run` installs it): `/usr/lib/postgresql/<v>/bin`,
 * else `initdb` on the PATH. PostgreSQL refuses to run as root: as root, the cluster runs as the
 * `postgres` user the package creates. `fsync=off` (tests kill writers, never the server).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

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
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface TestPostgres {
  /** `postgres://harness@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  /** A fresh database; its URL. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a cluster (about a second). */
export async function startPostgres(options: { fsync?: boolean } = {}): Promise<TestPostgres> {
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
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'harness', '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C'], { encoding: 'utf8', ...(ids ?? {}) });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const server: ChildProcess = spawn(
    join(bin, 'postgres'),
    ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', `fsync=${options.fsync ? 'on' : 'off'}`, '-c', 'max_connections=200', '-c', 'shared_buffers=32MB'],
    { stdio: ['ignore', 'ignore', 'pipe'], ...(ids ?? {}) },
  );
  let log = '';
  server.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const url = `postgres://harness@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (server.exitCode !== null || Date.now() > deadline) throw new Error(`PostgreSQL did not start: ${(error as Error).message}\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    port,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } finally {
        await client.end();
      }
      return `postgres://harness@127.0.0.1:${port}/${name}`;
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
