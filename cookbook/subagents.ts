/**
 * Cookbook: delegating to a subagent — the `subagents` plugin's `run_subagent` tool.
 * Run: npx tsx cookbook/subagents.ts
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCassette } from '../plugins/llm-replay/index.ts';
import { createHarness, listChildSessions, readJournalHeader, type ApprovalRequest, type ForwardedEvent, type HarnessConfig } from '../runtime/index.ts';

const config: HarnessConfig = {
  defaults: { provider: 'scripted', model: 'delegate' },
  plugins: [
    { module: '../plugins/llm-scripted/index.ts', config: { scripts: { delegate: './scripts/delegate.json' } } },
    { module: '../plugins/tools-workspace/index.ts' },
    { module: '../plugins/approvals/index.ts' },
    { module: '../plugins/token-meter/index.ts' },
    { module: '../plugins/subagents/index.ts', config: { maxDepth: 1 } },
  ],
};
const baseDir = fileURLToPath(new URL('.', import.meta.url));

export async function main(): Promise<{
  answer: string;
  child: { id: string; parentSession: unknown };
  asked: { name: string; sessionId: string; origin?: readonly string[] }[];
  childLines: string[];
  summary: string;
  tokens: { parent: number; child: number; rolledUp: number };
  cassette: { same: boolean; subagents: { recorded: number; rerun: number } };
}> {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-'));
  const workspace = mkdtempSync(join(tmpdir(), 'harness-cookbook-ws-'));
  cpSync(fileURLToPath(new URL('demo-workspace', import.meta.url)), workspace, { recursive: true });
  const harness = await createHarness({ config, baseDir, dataDir });
  try {
    const session = await harness.createSession({ cwd: workspace });
    // The read-only policy: reads run, a write is asked — here a stand-in for a person who says yes.
    const asked: ApprovalRequest[] = [];
    const approve = harness.ctx.approvals!.create('read-only', {
      ask: (request) => {
        asked.push(request);
        return true;
      },
    });
    // The child's events come through the parent's run, each marked with its origin (the child's id).
    const childLines: string[] = [];
    let answer = '';
    for await (const event of session.run('Get the expenses summarised by a subagent.', { approve }) as AsyncIterable<ForwardedEvent>) {
      if (event.origin !== undefined && event.type === 'tool/call') childLines.push(`[${event.origin.join(' > ')}] ${event.data.name}`);
      if (event.origin === undefined && event.type === 'assistant/message') answer = event.data.message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    }
    // The child has its own journal; its header names the parent and the call that spawned it.
    const [child] = await listChildSessions(session.id, harness.store);
    const header = await readJournalHeader(child!.path);
    const meter = harness.ctx.tokenMeter!;
    const total = (usage: { inputTokens?: number; outputTokens?: number }) => (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
    const tokens = { parent: total(session.state.usage), child: total(meter.session(child!.id).totals), rolledUp: total(meter.session(session.id).totals) };
    const summary = readFileSync(join(workspace, 'notes/expenses.md'), 'utf8');
    await session.close();
    // A cassette of the parent re-runs the child's recorded calls too.
    const report = await runCassette(session.path, { config, baseDir, approve: 'allow-all' });
    return {
      answer,
      child: { id: child!.id, parentSession: header.parentSession },
      asked: asked.map((r) => ({ name: r.name, sessionId: r.sessionId, ...(r.origin ? { origin: r.origin } : {}) })),
      childLines,
      summary,
      tokens,
      cassette: { same: report.same, subagents: report.subagents },
    };
  } finally {
    await harness.dispose();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(workspace, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
