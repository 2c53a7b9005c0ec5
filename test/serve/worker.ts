/**
 * One `harness serve` worker for the multi-worker test: the scripted model (a tool call, then an
 * answer), the test tools, every call allowed, the shared data directory and the queue database
 * from the environment. Prints `listening <url>` and serves until killed.
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
const harness = await createHarness({
  dataDir,
  config: {
    defaults: { provider: 'scripted', model: 'test' },
    plugins: [{ module: plugin('llm-scripted'), config: { paceMs: Number(process.env.WORKER_PACE_MS ?? 15), fragmentChars: 6, scripts: { test: scriptPath } } }, { module: plugin('approvals') }],
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
const server = await startServer(harness, serveConfigSchema.parse({ port: 0, approvalPolicy: 'allow-all', queue: process.env.WORKER_QUEUE_URL, queueConcurrency: 4, queueExpireSeconds: 2 }), {
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
