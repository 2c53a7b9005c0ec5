/**
 * One `harness serve` worker for the multi-worker tests: the scripted model (a tool call, then an
 * answer), the test tools, every call allowed. From the environment: the data directory
 * (`WORKER_DATA_DIR`), the journal store (`WORKER_STORE`, default the data directory's file store;
 * a `postgres://` URL loads journal-postgres), the queue database (`WORKER_QUEUE_URL`; without it
 * a submitted turn runs in the worker that took it), the model's pace (`WORKER_PACE_MS`). Prints
 * `listening <url>` and serves until killed.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHarness, defineTool, z } from '../../runtime/index.ts';
import { serveConfigSchema, startServer } from '../../plugins/serve/index.ts';
import { plugin } from '../agent/support.ts';

const dataDir = process.env.WORKER_DATA_DIR!;
const scriptPath = join(dataDir, `script-${process.pid}.json`);
writeFileSync(
  scriptPath,
  JSON.stringify({
    replies: [
      { when: { step: 1 }, reply: { text: 'Looking.', toolCalls: [{ name: 'peek', arguments: { key: 'k' } }] } },
      { reply: { text: 'Found it: the value is there, and this answer streams in several pieces so a kill can land inside it.' } },
    ],
  }),
);
const store = process.env.WORKER_STORE;
const harness = await createHarness({
  dataDir,
  ...(store ? { store } : {}),
  config: {
    defaults: { provider: 'scripted', model: 'test' },
    plugins: [
      { module: plugin('llm-scripted'), config: { paceMs: Number(process.env.WORKER_PACE_MS ?? 15), fragmentChars: 6, scripts: { test: scriptPath } } },
      { module: plugin('approvals') },
      ...(store?.startsWith('postgres') ? [{ module: plugin('journal-postgres'), config: { tailPollMs: 500 } }] : []),
    ],
  },
});
harness.ctx.tools.register(
  defineTool({
    name: 'peek',
    description: 'Reads a value.',
    input: z.object({ key: z.string() }),
    permission: 'read',
    execute: async ({ key }) => {
      await new Promise((r) => setTimeout(r, 50));
      return `value of ${key}`;
    },
  }),
);
const queue = process.env.WORKER_QUEUE_URL;
const server = await startServer(harness, serveConfigSchema.parse({ port: 0, approvalPolicy: 'allow-all', ...(queue ? { queue } : {}), queueConcurrency: 4, queueExpireSeconds: 2 }), {
  token: process.env.WORKER_TOKEN!,
  cwd: dataDir,
  queueTuning: { retryDelaySeconds: 1, pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 },
});
process.stdout.write(`listening ${server.url}\n`);
process.on(
  'SIGTERM',
  () =>
    void server
      .close()
      .then(() => harness.dispose())
      .then(() => process.exit(0)),
);
