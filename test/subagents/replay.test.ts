/** `harness replay` of a parent shows its children's steps where the parent ran them. */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Harness } from '../../runtime/index.ts';
import { harness as cli } from '../cli/support.ts';
import { delegation, subagentHarness } from './support.ts';

let h: (Harness & { dir: string }) | undefined;
let parentId: string;

beforeAll(async () => {
  h = await subagentHarness(delegation);
  const parent = await h.createSession({ cwd: h.dir });
  await parent.prompt('delegate this', { approve: () => 'allow' });
  parentId = parent.id;
  await h.dispose();
});
afterAll(async () => {
  await h?.dispose();
});

describe('harness replay of a parent', () => {
  it("prints the child's steps indented under the call that spawned it", async () => {
    const result = await cli(['replay', parentId], { home: join(h!.dir, 'data'), cwd: h!.dir });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = result.stdout;
    const lines = out.split('\n');
    const at = (text: string) => lines.findIndex((line) => line.includes(text));
    // Parent: the call, then the child's transcript, then the parent's result and answer.
    expect(at('→ run_subagent')).toBeGreaterThan(-1);
    expect(at(`↳ subagent ${parentId}.sub1`)).toBeGreaterThan(at('→ run_subagent'));
    expect(lines[at(`↳ subagent ${parentId}.sub1`)]).toMatch(/^ {6}↳ subagent/);
    expect(lines[at('→ poke')]).toMatch(/^ {12}→ poke/);
    expect(at('→ poke')).toBeGreaterThan(at('↳ subagent'));
    expect(lines[at('✓ poke')]).toMatch(/^ {6}/);
    expect(at('CHILD_OK')).toBeGreaterThan(at('✓ poke'));
    expect(at('✓ run_subagent')).toBeGreaterThan(at('turn 1 completed'));
    expect(at('PARENT_DONE')).toBeGreaterThan(at('✓ run_subagent'));
    // The footer adds the children's tokens.
    expect(out).toMatch(/· 250 in · 25 out · subagents 100 in · 10 out/);
  });

  it('replays the child on its own, naming its parent', async () => {
    const result = await cli(['replay', `${parentId}.sub1`], { home: join(h!.dir, 'data'), cwd: h!.dir });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`subagent of ${parentId} (call `);
    expect(result.stdout).toContain('depth 1');
  });
});
