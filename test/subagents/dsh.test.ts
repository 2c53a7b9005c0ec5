/**
 * The shared DeepSeek Harness subagent session (acp-agent/subagent-spawn-in-process: session.jsonl
 * spawns session.1.jsonl) imports as a linked parent/child pair that replays and re-runs as a cassette.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCassette } from '../../plugins/llm-replay/index.ts';
import { listChildSessions, writeImportedSession, type ImportedSession } from '../../runtime/index.ts';
import { tempDir } from '../agent/support.ts';
import { harness as cli, dshRoot, projectRoot } from '../cli/support.ts';
import { ofType, readAll } from './support.ts';

const scenario = join(dshRoot, 'acp-agent/subagent-spawn-in-process');
const PARENT = '5138ed0d-e86e-4a7d-b75b-803307e92b17';
const CHILD = 'ea339828-7885-42e1-9083-4355e6f1708d';
const CALL = 'call_00_gVbLWC12Qu8JheZpVRRz8749';
const dir = tempDir('harness-subagents-dsh-');
const dataDir = join(dir, 'data');
let written: ImportedSession;

beforeAll(async () => {
  written = await writeImportedSession(join(scenario, 'session.jsonl'), { dataDir });
});
afterAll(() => undefined);

describe('dsh import of a parent and its subagent', () => {
  it('writes both journals, the child linked to the parent and to the call that spawned it', async () => {
    expect(written.header.id).toBe(PARENT);
    expect(written.children.map((c) => c.header.id)).toEqual([CHILD]);
    const child = await readAll(written.children[0]!.path);
    expect(child.header.parentSession).toEqual({ sessionId: PARENT, callId: CALL, depth: 1 });
    expect(child.header.importedFrom?.header).toMatchObject({ parentSession: PARENT, delegationDepth: 1, origin: 'subagent' });
    expect(ofType(child.events, 'assistant/message').at(-1)!.data.message.content.at(-1)).toEqual({ type: 'text', text: 'CHILD_OK' });
    const parent = await readAll(written.path);
    expect(ofType(parent.events, 'tool/call').map((e) => [e.data.callId, e.data.name])).toEqual([[CALL, 'subagent']]);
    expect((await listChildSessions(PARENT, dataDir)).map((s) => s.id)).toEqual([CHILD]);
  });

  it('replays: the transcript of the parent shows the child turn before the call result', async () => {
    const result = await cli(['replay', PARENT], { home: dataDir, cwd: dir });
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    const at = (pattern: RegExp) => lines.findIndex((line) => pattern.test(line));
    expect(at(/→ subagent /)).toBeGreaterThan(-1);
    expect(at(new RegExp(`^ {6}↳ subagent ${CHILD}$`))).toBeGreaterThan(at(/→ subagent /));
    expect(at(/^ {12}CHILD_OK$/)).toBeGreaterThan(at(/↳ subagent/));
    expect(at(/^ +\d+ ✓ subagent$/)).toBeGreaterThan(at(/^ {12}CHILD_OK$/));
    expect(at(/^ {6}PARENT_DONE$/)).toBeGreaterThan(at(/✓ subagent$/));
    expect(result.stdout).toMatch(/subagents 48 in · 21 out · 2,816 cache read · 17 reasoning/);
  });

  it('re-runs as a cassette, the child turn included: from the imported journals and from the dsh files', async () => {
    for (const path of [written.path, join(scenario, 'session.jsonl')]) {
      // The product config (it has a system prompt: the recorded {{system}} stands for one).
      const report = await runCassette(path, { config: join(projectRoot, 'harness.config.ts') });
      expect(report.divergences).toEqual([]);
      expect(report.same).toBe(true);
      expect(report.subagents).toEqual({ recorded: 1, rerun: 1 });
      expect(report.calls).toMatchObject({ recorded: 3, served: 3 });
      expect(report.notes.join('\n')).toContain('1 subagent session re-run');
    }
  });
});
