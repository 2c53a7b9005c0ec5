/**
 * A cassette finds a recording's subagents by reading its folder's headers once for the whole tree
 * (issue 22, "no quadratic paths … the cassette"). The recording's folder is a sessions folder that
 * holds every session; runCassette read the header of each journal there again for every recording
 * of the tree (the parent, each child, each grandchild): K subagents, K + 1 passes over the folder.
 * Counted, not timed: the opens of the folder's unrelated journals (each header read opens it).
 */
import { writeFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCassette } from '../../plugins/llm-replay/index.ts';
import type { Harness } from '../../runtime/index.ts';
import { delegation, subagentHarness } from './support.ts';

/**
 * Every file opened through `node:fs/promises` while the spy is on (the runtime is loaded by Node,
 * not through vitest's module graph: the builtin's live binding is swapped instead of a mock).
 */
const opened: string[] = [];
const fsPromises = createRequire(import.meta.url)('node:fs/promises') as typeof import('node:fs/promises');
const realOpen = fsPromises.open;
const countedOpen = ((path: string, ...rest: [never]) => {
  opened.push(String(path));
  return realOpen(path, ...rest);
}) as typeof realOpen;
function spyOnOpen(on: boolean): void {
  fsPromises.open = on ? countedOpen : realOpen;
  syncBuiltinESMExports();
}

/** Unrelated sessions in the recording's folder. */
const OTHERS = 30;
let h: (Harness & { dir: string }) | undefined;
let recording: string;

beforeAll(async () => {
  h = await subagentHarness(delegation);
  const parent = await h.createSession({ cwd: h.dir });
  await parent.prompt('delegate this', { approve: h.ctx.approvals!.create('read-only', { ask: () => true }) });
  recording = parent.path;
  await h.dispose();
  for (let i = 0; i < OTHERS; i++) writeFileSync(join(h.dataDir, 'sessions', `other-${i}.jsonl`), `${JSON.stringify({ type: 'session', version: 1, id: `other-${i}`, createdAtMs: i })}\n`);
});
afterAll(async () => {
  await h?.dispose();
});

describe('a cassette of a parent in a folder of other sessions', () => {
  it('re-runs the same, reading each other journal’s header once', async () => {
    spyOnOpen(true);
    let report: Awaited<ReturnType<typeof runCassette>>;
    try {
      report = await runCassette(recording, { config: h!.config, approve: 'read-only' });
    } finally {
      spyOnOpen(false);
    }
    expect(report.divergences).toEqual([]);
    expect(report.subagents).toEqual({ recorded: 1, rerun: 1 });
    const others = opened.filter((path) => /other-\d+\.jsonl$/.test(path));
    expect(new Set(others).size).toBe(OTHERS);
    expect(others).toHaveLength(OTHERS);
  });
});
