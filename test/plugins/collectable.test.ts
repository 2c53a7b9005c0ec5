/**
 * A replaced plugin generation is collectable (issue 16, "bounded memory across reloads"): after a
 * hot reload and a turn on the new generation, nothing of the old generation's setup is reachable
 * — its adapter instance, zod schema, `llm/stream` middleware, `session/event` listener, tool,
 * timer and context (test/plugins/collectable/plugin.ts publishes weak references to them). What
 * stays per reload is the module records (Node's ESM loader never frees one), not the instances.
 * Run in a child process with --expose-gc, so the collection is forced and nothing of the test
 * runner holds a reference.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const RELOADS = 6;
const EVERYTHING = ['adapter', 'schema', 'middleware', 'listener', 'tool', 'timer', 'ctx'];

describe('hot reload lets the replaced generation go', () => {
  it(`after ${RELOADS} reloads, each with a turn, only the current generation's setup is reachable`, { timeout: 180_000 }, () => {
    const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', join(import.meta.dirname, 'collectable/child.ts'), String(RELOADS)], { encoding: 'utf8', timeout: 170_000 });
    expect(child.status, child.stderr).toBe(0);
    const { alive, turns } = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as { alive: string[][]; turns: number };
    expect(turns).toBe(RELOADS + 1);
    expect(alive).toEqual([...Array.from({ length: RELOADS }, () => []), EVERYTHING]);
  });
});
