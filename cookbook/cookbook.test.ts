/**
 * Every cookbook example runs here, and its outcome is checked.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('cookbook examples', { timeout: 120_000 }, () => {
  it('first-plugin: an llm/stream middleware with its own hook, service and session event', async () => {
    const { main } = await import('./first-plugin.ts');
    const result = await main();
    expect(result.calls.map((c) => c.finish)).toEqual(['tool-calls', 'tool-calls', 'stop']);
    expect(result.calls.every((c) => c.provider === 'scripted' && c.chunkCount > 3 && c.firstChunkMs >= 0)).toBe(true);
    expect(result.calls.at(-1)!.textChars).toBeGreaterThan(100);
    // As first-plugin.md says: each call's stats are journaled — the last call of the turn too.
    expect(result.emitted).toBe(3);
    expect(result.journaled).toBe(3);
  });

  it('redaction: a secret split across deltas is masked in the answer, the journal and the next request; the conformance kit passes it', async () => {
    const { main, LEAKED } = await import('./redaction.ts');
    const result = await main();
    expect(result.answer).toBe('Your key is [redacted], keep it safe.');
    expect(result.answer).not.toContain(LEAKED);
    expect(result.journalHasSecret).toBe(false);
    expect(result.requestCount).toBeGreaterThan(0);
    expect(result.requestHasSecret).toBe(false);
    expect(result.report.violations).toEqual([]);
    expect(result.report.ok).toBe(true);
  });

  it('llm-adapter: an OpenAI-compatible provider by config, against the fixture server, through the real SDK', async () => {
    const { main } = await import('./llm-adapter.ts');
    const result = await main();
    expect(result.provider).toBe('acme');
    expect(result.requestPath).toBe('/v1/chat/completions');
    expect(result.text).toMatch(/^I'm unable to provide real-time weather updates\./);
    expect(result.usage).toMatchObject({ inputTokens: expect.any(Number), outputTokens: expect.any(Number) });
  });

  it('adding-a-tool: defineTool + ctx.tools.register, called by a scripted model', async () => {
    const { main } = await import('./adding-a-tool.ts');
    const result = await main();
    // demo-workspace/README.md: `wc -w -l` says 9 lines, 58 words (its last line ends with a newline).
    expect(result.result).toBe('58 words in 9 lines');
    expect(result.answer).toBe(`README.md has ${result.result}.`);
    expect(result.decidedBy).toBe('policy:read-only');
  });

  it('adding-a-tool: the tool counts lines like wc, and refuses paths that lead out of the workspace', async () => {
    const { countWords, wordCount } = await import('./adding-a-tool.ts');
    expect(countWords('')).toEqual({ words: 0, lines: 0 });
    expect(countWords('one two\nthree')).toEqual({ words: 3, lines: 2 });
    expect(countWords('one two\nthree\n')).toEqual({ words: 3, lines: 2 });
    const root = mkdtempSync(join(tmpdir(), 'harness-cookbook-tool-'));
    try {
      mkdirSync(join(root, 'ws/notes'), { recursive: true });
      writeFileSync(join(root, 'ws/notes/a.txt'), 'in the workspace\n');
      writeFileSync(join(root, 'secret.txt'), 'outside\n');
      symlinkSync(join(root, 'secret.txt'), join(root, 'ws/notes/link.txt'));
      const cwd = join(root, 'ws');
      const run = (path: string) => Promise.resolve(wordCount.execute({ path }, { cwd, signal: new AbortController().signal, callId: 'c', sessionId: 's', output: () => undefined }));
      await expect(run('notes/a.txt')).resolves.toEqual({ content: '3 words in 1 line' });
      await expect(run('../secret.txt')).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
      await expect(run('notes/../../secret.txt')).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
      await expect(run('notes/link.txt')).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
      await expect(run(join(root, 'secret.txt'))).rejects.toMatchObject({ code: 'PATH_OUTSIDE_WORKSPACE' });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('approval-policy: a custom ApproveFn allows notes/ writes and denies the rest, `..` and symlink escapes included', async () => {
    const { main } = await import('./approval-policy.ts');
    const result = await main();
    expect(result.decisions).toEqual([
      { name: 'write_file', decision: 'allow' },
      { name: 'write_file', decision: 'deny', reason: 'writes go to notes/ only, not src/ledger.ts' },
      { name: 'write_file', decision: 'deny', reason: 'writes go to notes/ only, not src/ledger.ts (notes/../src/ledger.ts)' },
      { name: 'write_file', decision: 'deny', reason: 'writes go to notes/ only, not src/ledger.ts (notes/link/ledger.ts)' },
      { name: 'write_file', decision: 'deny', reason: 'notes/out/escaped.md is outside the workspace' },
      { name: 'exec_command', decision: 'deny', reason: 'exec_command is not allowed here' },
    ]);
    expect(result).toMatchObject({ summaryWritten: true, sourceUntouched: true, notesKept: true, nothingOutside: true });
  });

  it('hot-reload: an adapter reloaded mid-session serves the next turn; a broken edit keeps the old one', async () => {
    const { main } = await import('./hot-reload.ts');
    const result = await main();
    expect(result.replies).toEqual(['Hello from v1. You said: one', 'Hello from v2! You said: two', 'Hello from v2! You said: three']);
    expect(result.reloads).toEqual(['reloaded echo-model → generation 2', 'reload of echo-model failed (PLUGIN_IMPORT_FAILED); generation 2 still serving']);
    expect(result.turns).toEqual([1, 2, 3]);
    expect(result.sameJournal).toBe(true);
  });

  it('otel: a turn traced live to a collector; the same span tree exported from its journal', async () => {
    const { main } = await import('./otel.ts');
    const result = await main();
    expect(result.liveTree.map((line) => line.trim().split('  ')[0])).toEqual([
      'invoke_agent harness',
      'step',
      'chat scripted-default',
      'execute_tool list_dir',
      'step',
      'chat scripted-default',
      'execute_tool read_file',
      'step',
      'chat scripted-default',
    ]);
    expect(result.liveTree[2]).toContain('gen_ai.response.finish_reasons=tool_calls');
    expect(result.liveTree[8]).toContain('gen_ai.response.finish_reasons=stop');
    expect(result.journalTree).toEqual(result.liveTree);
    expect(result.exported).toBe(9);
    expect(result.dropped).toBe(0);
    expect(result.metricRequests).toBeGreaterThan(0);
  });

  it('serve: harness serve driven with fetch — a session, a turn, its approvals answered, its events over SSE', async () => {
    const { main } = await import('./serve.ts');
    const result = await main();
    expect(result.status).toBe(202);
    expect(result.turn).toMatchObject({ turn: 1, startSeq: 2 }); // seq 1 is the session's title
    expect(result.seen.map((e) => e.seq)).toEqual(result.seen.map((_, i) => result.turn.startSeq + i));
    expect(result.seen.at(-1)!.type).toBe('turn/end');
    expect(result.approvals).toEqual(['list_dir: 200', 'read_file: 200']);
    expect(result.reply).toContain('The workspace has 4 entries');
    expect(result.turnEnd).toEqual({ turn: 1, reason: 'completed' });
    expect(result.sessions).toBe(1);
    expect(result.unauthorized).toBe(401);
  });

  it('replay-and-resume: read, fold at a seq, fork, resume', async () => {
    const { main } = await import('./replay-and-resume.ts');
    const result = await main();
    expect(result.messagesAfterFirstToolResult).toBe(3);
    expect(result.finalMessages).toBe(6);
    expect(result.forkParent).toMatchObject({ seq: result.eventCount });
    expect(result.resumedTurnEnd).toBe('completed');
    expect(result.resumedTurns).toBe(2);
    expect(result.headerReasons).toEqual(['initial', 'resume']);
  });

  it('cassette: a recorded session re-runs through the plugins with the model replaced; a plugin change is named by path', async () => {
    const { main } = await import('./cassette.ts');
    const result = await main();
    expect(result.calls).toMatchObject({ recorded: 3, served: 3, compared: 3, diverged: 0 });
    expect(result.toolResults).toMatchObject({ served: 2, rerun: 0 });
    expect(result.diverged).toMatch(/^call 1 \(turn 1 step 1\): system: ".*Answer in English\." ≠ ".*Answer in English\. Never run commands\."$/);
    expect(result.faults).toEqual(['disconnect after chunk 1']);
  });

  it('import-dsh: a DeepSeek Harness session becomes a journal of ours', async () => {
    const { main } = await import('./import-dsh.ts');
    const result = await main();
    expect(result.assemblerMismatches).toBe(0);
    expect(result.importedFrom).toBe('dsh');
    expect(result.turns).toBe(1);
    expect(result.lastTurn).toEqual({ turn: 1, reason: 'completed' });
    expect(result.surface).toEqual(['user', 'plugin', 'assistant', 'tool', 'assistant']);
    expect(result.dshOnlyRecords.length).toBeGreaterThan(0);
  });

  it('mcp: a stdio MCP server’s tools as glossary__*, read-only ones run by the policy, the others asked', async () => {
    const { main } = await import('./mcp.ts');
    const result = await main();
    expect(result.tools).toEqual(['glossary__define', 'glossary__add_term']);
    expect(result.asked).toEqual(['glossary__add_term']);
    expect(result.decisions).toEqual(['allow by policy:read-only', 'allow by user']);
    expect(result.answer).toBe('journal: the append-only list of events a session is; its state is a fold over them\nadded "fiber" (3 terms)');
  });

  it('subagents: run_subagent spawns a linked child, its write asked once with its origin, usage rolled up, a cassette of both same', async () => {
    const { main } = await import('./subagents.ts');
    const result = await main();
    expect(result.answer).toBe('Done: the subagent wrote notes/expenses.md.');
    const parentId = result.child.id.slice(0, -'.sub1'.length);
    expect(result.child.parentSession).toEqual({ sessionId: parentId, callId: expect.any(String), depth: 1 });
    expect(result.asked).toEqual([{ name: 'write_file', sessionId: result.child.id, origin: [result.child.id] }]);
    expect(result.childLines).toEqual([`[${result.child.id}] read_file`, `[${result.child.id}] write_file`]);
    expect(result.summary).toBe('# Expenses\n\ngroceries 19.60\ntransport 2.80\nbooks 18.00\n');
    expect(result.tokens.child).toBeGreaterThan(0);
    expect(result.tokens.rolledUp).toBe(result.tokens.parent + result.tokens.child);
    expect(result.cassette).toEqual({ same: true, subagents: { recorded: 1, rerun: 1 } });
  });

  it('an example runs on its own with tsx, as its page says', () => {
    const root = fileURLToPath(new URL('..', import.meta.url));
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'cookbook/hot-reload.ts'], { cwd: root, encoding: 'utf8', timeout: 90_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("'Hello from v2! You said: three'");
  });

  it('an example that reads the shared fixtures says where it looked and which variable to set when they are not there', () => {
    const root = fileURLToPath(new URL('..', import.meta.url));
    const env = { ...process.env, HARNESS_FIXTURES_DIR: '/nonexistent/fixtures' };
    for (const [example, wanted] of [
      ['llm-adapter', '/nonexistent/fixtures/provider-streams, which is not there; set HARNESS_FIXTURES_DIR'],
      ['import-dsh', '/nonexistent/fixtures/dsh-sessions/acp-agent/fs-read/session.jsonl, which is not there; set HARNESS_FIXTURES_DIR'],
    ] as const) {
      const run = spawnSync(process.execPath, ['--import', 'tsx', `cookbook/${example}.ts`], { cwd: root, encoding: 'utf8', timeout: 90_000, env });
      expect(run.status, example).toBe(1);
      // One line, no stack (before: a raw ENOENT stack trace).
      expect(run.stderr.trim().split('\n'), example).toEqual([expect.stringContaining(wanted)]);
    }
  });
});
