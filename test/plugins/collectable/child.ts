/**
 * Child process of collectable.test.ts (run with --expose-gc): loads the collectable plugin,
 * reloads it `RELOADS` times with a turn after each, collects garbage, and prints as JSON which of
 * each generation's weak references are still alive.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { createHarness } from '../../../runtime/harness.ts';

const RELOADS = Number(process.argv[2] ?? 5);
const module = join(import.meta.dirname, 'plugin.ts');
const dir = mkdtempSync(join(tmpdir(), 'harness-collectable-'));
const harness = await createHarness({ dataDir: join(dir, 'data'), config: { defaults: { provider: 'collectable', model: 'm' }, plugins: [{ module }] } });
const session = await harness.createSession({ cwd: dir });
const turn = async () => {
  for await (const event of session.run('go')) if (event.type === 'turn/end' && event.data.reason !== 'completed') throw new Error(`turn ended ${event.data.reason}`);
};
await turn();
for (let i = 0; i < RELOADS; i++) {
  await harness.host.reload('collectable');
  await turn();
}
// The plugin's module of the last generation (the same registry symbol in every generation).
const { generations } = (await import(module)) as typeof import('./plugin.ts');
const gc = (globalThis as { gc?: () => void }).gc!;
for (let i = 0; i < 3; i++) {
  await tick(); // a WeakRef's target is kept to the end of the job that made or read it
  gc();
}
const alive = generations().map((generation) =>
  Object.entries(generation.refs)
    .filter(([, ref]) => ref.deref() !== undefined)
    .map(([name]) => name),
);
await session.close();
await harness.dispose();
rmSync(dir, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify({ alive, turns: session.state.turnCount })}\n`);
