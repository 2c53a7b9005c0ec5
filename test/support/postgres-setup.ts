/**
 * vitest globalSetup: one PostgreSQL cluster for the whole run, started on the first test file's
 * request (a run with no Postgres test starts none) and stopped when the run ends. Test files run in
 * processes of their own, so they reach it through a small HTTP broker on 127.0.0.1 whose address
 * is provided as `harnessPostgresBroker`; test/support/postgres.ts `startPostgres()` asks it for
 * databases (`POST /create?name=`, `POST /drop?name=`). Requests run one at a time.
 */
import { createServer, type Server } from 'node:http';
import type { TestProject } from 'vitest/node';
import { startCluster, type PostgresCluster } from './postgres.ts';

let cluster: Promise<PostgresCluster> | undefined;
let server: Server | undefined;

export async function setup(project: TestProject): Promise<void> {
  let queue: Promise<unknown> = Promise.resolve();
  server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const name = url.searchParams.get('name') ?? '';
    const reply = (status: number, body: unknown): void => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (request.method !== 'POST' || !/^[a-z0-9_]{1,63}$/.test(name) || (url.pathname !== '/create' && url.pathname !== '/drop')) {
      reply(400, { error: `PostgreSQL broker: POST /create or /drop with ?name=[a-z0-9_]+, not ${request.method} ${request.url}` });
      return;
    }
    const task = queue.then(async () => {
      cluster ??= startCluster();
      const running = await cluster;
      if (url.pathname === '/create') return { url: await running.createDatabase(name), port: running.port };
      await running.dropDatabase(name);
      return {};
    });
    queue = task.catch(() => undefined);
    task.then(
      (body) => reply(200, body),
      (error: Error) => reply(500, { error: error.message }),
    );
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('PostgreSQL broker: no address');
  project.provide('harnessPostgresBroker', `http://127.0.0.1:${address.port}`);
}

export async function teardown(): Promise<void> {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  const running = await cluster?.catch(() => undefined);
  await running?.stop();
}
