/**
 * The main job on a fresh machine: `npm start` (the scripted default, offline, in a temporary copy of
 * the demo workspace) leaves a journal that `harness replay --verify` accepts; every reading of it
 * works; damage is detected.
 */
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, harness, journalOf, journals, projectRoot, readEvents, run, sessionIdOf, tempDir } from './support.ts';

const home = tempDir('start');
let journal: string;
let startOutput: string;

beforeAll(async () => {
  // `npm start` exactly as a user runs it, with a HARNESS_HOME that does not exist yet.
  const result = await run('npm', ['start', '--silent'], { env: cleanEnv({ HARNESS_HOME: join(home.dir, 'fresh-home') }), timeoutMs: 120_000 });
  startOutput = result.stdout;
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  journal = journalOf(result.stdout);
}, 150_000);
afterAll(() => {
  home.cleanup();
  // npm start keeps its workspace copy (the journal's cwd) for the user; the test removes it.
  const copy = /demo workspace: (\S+) /.exec(startOutput ?? '')?.[1];
  if (copy?.includes('harness-demo-')) rmSync(copy, { recursive: true, force: true });
});

const opts = () => ({ home: join(home.dir, 'fresh-home') });

describe('npm start', { timeout: 180_000 }, () => {
  it('streams the scripted agent task in a temporary copy of the demo workspace, with a footer and the replay command', () => {
    expect(startOutput).toMatch(/demo workspace: \S+harness-demo-\S+ \(a copy of cookbook\/demo-workspace\)/);
    expect(startOutput).toContain('→ list_dir {"path":"."}');
    expect(startOutput).toContain('✓ list_dir');
    expect(startOutput).toContain('→ read_file {"path":"README.md"}');
    expect(startOutput).toContain('│ 1 # Pocket Ledger');
    expect(startOutput).toContain('Here is what I found. The workspace has 4 entries: README.md, expenses.txt, notes/, src/.');
    // The scripted model reports no cache counts: none is shown (an unknown count is absent, never 0).
    expect(startOutput).toMatch(/^tokens {2}this turn: [\d,]+ in · [\d,]+ out · [\d,]+ reasoning · cost \$0\.00$/m);
    expect(startOutput).toMatch(/^ {8}session: {3}[\d,]+ in · [\d,]+ out · [\d,]+ reasoning · cost \$0\.00 \(1 turn\)$/m);
    expect(startOutput).not.toContain('cache');
    expect(startOutput).toContain(`replay  node bin/harness.js replay ${sessionIdOf(journal)}`);
    expect(journal.startsWith(join(home.dir, 'fresh-home', 'sessions'))).toBe(true);
    expect(journals(join(home.dir, 'fresh-home'))).toHaveLength(1);
  });

  it('leaves a journal that replay --verify accepts (exit 0)', async () => {
    const result = await harness(['replay', sessionIdOf(journal), '--verify'], opts());
    expect(result.stdout).toMatch(/^ok /);
    expect(result.stdout).toContain('every tool call answered · messages match their chunks');
    expect(result.code).toBe(0);
    const events = readEvents(journal);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === 'approval/decided').map((e) => e.data.decidedBy)).toEqual(['policy:read-only', 'policy:read-only']);
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: 'completed' } });
  });

  it('replays as a transcript, as raw events and as the state at a seq', async () => {
    const transcript = await harness(['replay', journal], opts());
    expect(transcript.code).toBe(0);
    expect(transcript.stdout).toContain('── turn 1 ──');
    expect(transcript.stdout).toMatch(/user: What is in this workspace\?/);
    expect(transcript.stdout).toContain('✓ read_file');
    expect(transcript.stdout).toContain('turn 1 completed');

    const json = await harness(['replay', journal, '--json'], opts());
    const lines = json.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines[0]).toMatchObject({ type: 'session', version: 1, id: sessionIdOf(journal) });
    expect(lines.slice(1)).toEqual(readEvents(journal));

    const events = readEvents(journal);
    const firstResult = events.find((e) => e.type === 'tool/result')!;
    const at = await harness(['replay', journal, '--at', String(firstResult.seq), '--json'], opts());
    const state = JSON.parse(at.stdout).state;
    expect(state.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(state.openTurn).toMatchObject({ turn: 1 });
    const readable = await harness(['replay', journal, '--at', String(firstResult.seq)], opts());
    expect(readable.stdout).toContain(`at seq ${firstResult.seq}`);
    expect(readable.stdout).toContain('model   scripted/scripted-default');
    expect(readable.stdout).toContain('turns   1 · turn 1 open');
    expect(readable.stdout).toContain('messages 3');
  });

  it('--verify exits non-zero on a journal with a corrupt middle line, and names the line', async () => {
    const damaged = join(home.dir, 'damaged.jsonl');
    const lines = readFileSync(journal, 'utf8').split('\n');
    lines[9] = lines[9]!.slice(0, 25); // line 10: a cut record with lines after it
    writeFileSync(damaged, lines.join('\n'));
    const before = readFileSync(damaged);
    const result = await harness(['replay', damaged, '--verify'], opts());
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^damaged /);
    expect(result.stdout).toContain(`JOURNAL_CORRUPT: ${damaged}:10: corrupt journal line`);
    expect(readFileSync(damaged).equals(before)).toBe(true);
    // The transcript refuses it too (exit 1, one error line), and reads past it with --salvage.
    const transcript = await harness(['replay', damaged], opts());
    expect(transcript.code).toBe(1);
    expect(transcript.stderr).toMatch(/^error JOURNAL_CORRUPT: /);
    expect(transcript.stderr).toMatch(/^hint: `node \S+ replay \S+damaged\.jsonl --salvage` reads past the damaged line; `node \S+ replay \S+damaged\.jsonl --verify` lists all the damage\.$/m);
    const salvaged = await harness(['replay', damaged, '--salvage'], opts());
    expect(salvaged.code).toBe(0);
    expect(salvaged.stderr).toContain('skipped line 10');
  });

  it('a journal with a line removed: the error names the hole, not a corrupt line; --salvage reads on and says which seqs are missing', async () => {
    const holed = join(home.dir, 'holed.jsonl');
    const lines = readFileSync(journal, 'utf8').split('\n');
    lines.splice(4, 2); // lines 5 and 6: seqs 4 and 5
    writeFileSync(holed, lines.join('\n'));
    const refused = await harness(['replay', holed], opts());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`error JOURNAL_CORRUPT: ${holed}:5: the journal has a hole (seqs 4–5 are missing: this line holds seq 6 where 4 was expected; a line was removed or lost).`);
    const salvaged = await harness(['replay', holed, '--salvage'], opts());
    expect(salvaged.code).toBe(0);
    expect(salvaged.stderr).toBe('missing seqs 4–5 (before line 5)\n');
    expect(salvaged.stdout).toMatch(new RegExp(`\\n${lines.filter((line) => line !== '').length - 1} events \\(2 seqs missing\\) · `));
  });

  it('--verify catches a message that no longer matches its chunks, an unanswered tool call and a bad header', async () => {
    const events = readEvents(journal);
    const header = readFileSync(journal, 'utf8').split('\n')[0]!;
    const edited = join(home.dir, 'edited.jsonl');
    const lastResult = events.findLast((e) => e.type === 'tool/result')!;
    const tampered = events
      .filter((e) => e !== lastResult)
      .map((e, i) => ({ ...e, seq: i + 1 }))
      .map((e) => (e.type === 'assistant/message' && e.data.step === 3 ? { ...e, data: { ...e.data, message: { ...e.data.message, content: [{ type: 'text', text: 'Something else.' }] } } } : e));
    writeFileSync(edited, `${header}\n${tampered.map((e) => JSON.stringify(e)).join('\n')}\n`);
    const result = await harness(['replay', edited, '--verify'], opts());
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/assistant\/message \(turn 1, step 3\) differs from what its \d+ chunks assemble to/);
    expect(result.stdout).toMatch(/tool call call_s1_2_0 \(read_file, turn 1\) has no result/);

    const badHeader = join(home.dir, 'bad-header.jsonl');
    writeFileSync(badHeader, readFileSync(journal, 'utf8').replace('"version":1', '"version":7'));
    const header7 = await harness(['replay', badHeader, '--verify'], opts());
    expect(header7.code).toBe(1);
    expect(header7.stdout).toContain('JOURNAL_VERSION');
  });

  it('--cassette re-runs the journal offline and finds it the same; a tampered recording diverges (exit 1)', async () => {
    const same = await harness(['replay', sessionIdOf(journal), '--cassette'], opts());
    expect(same.stdout).toContain('✓ turn 1 completed · 3 model calls');
    expect(same.stdout).toContain('calls: 3 recorded, 3 served, 3 compared on the whole request, 0 diverged, 0 injected; tool results: 2 served, 0 re-run (2 recorded)');
    expect(same.stdout).toMatch(/^same every request, reply, tool result, approval and turn end matches the recording$/m);
    expect(same.code).toBe(0);

    const tampered = join(home.dir, 'tampered.jsonl');
    copyFileSync(journal, tampered);
    writeFileSync(tampered, readFileSync(tampered, 'utf8').replace(/("type":"assistant\/message".*?"text":")Here is what I found\./, '$1Here is what I made up.'));
    const diverged = await harness(['replay', tampered, '--cassette'], opts());
    expect(diverged.code).toBe(1);
    expect(diverged.stdout).toContain('diverged (1)');
    expect(diverged.stdout).toMatch(/✗ assistant message 3 \(turn 1 step 3\): content\[0\]\.text: "Here is what I made up\. .* ≠ "Here is what I found\. /m);
  });

  it('the start script is what package.json runs', () => {
    const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8'));
    expect(pkg.scripts.start).toBe('tsx cli/start.ts');
    expect(pkg.bin.harness).toBe('./bin/harness.js');
  });
});
