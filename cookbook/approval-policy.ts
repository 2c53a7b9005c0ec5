/**
 * Cookbook: an approval policy — an `ApproveFn` of your own.
 * Run: npx tsx cookbook/approval-policy.ts
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHarness, type ApproveFn, type SessionEvent } from '../runtime/index.ts';

/**
 * Reads run; writes run only inside `notes/`; commands never run. Every decision says who made it
 * and why — the loop journals it as `approval/decided`.
 */
export const notesOnly: ApproveFn = (request) => {
  if (request.permission === 'read') return { decision: 'allow', decidedBy: 'policy:notes-only' };
  const path = (request.input as { path?: unknown }).path;
  if (request.name === 'write_file' || request.name === 'edit_file') {
    if (typeof path === 'string' && path.startsWith('notes/') && !path.includes('..')) return { decision: 'allow', decidedBy: 'policy:notes-only' };
    return { decision: 'deny', decidedBy: 'policy:notes-only', reason: `writes go to notes/ only, not ${String(path)}` };
  }
  return { decision: 'deny', decidedBy: 'policy:notes-only', reason: `${request.name} is not allowed here` };
};

export async function main(): Promise<{ decisions: { name: string; decision: string; reason?: string }[]; summaryWritten: boolean; sourceUntouched: boolean; notesKept: boolean }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-'));
  const workspace = mkdtempSync(join(tmpdir(), 'harness-cookbook-ws-'));
  cpSync(fileURLToPath(new URL('demo-workspace', import.meta.url)), workspace, { recursive: true });
  const source = readFileSync(join(workspace, 'src/ledger.ts'), 'utf8');
  const harness = await createHarness({
    config: {
      defaults: { provider: 'scripted', model: 'tidy-notes' },
      plugins: [
        { module: '../plugins/llm-scripted/index.ts', config: { scripts: { 'tidy-notes': './scripts/tidy-notes.json' } } },
        { module: '../plugins/tools-workspace/index.ts' },
      ],
    },
    baseDir: fileURLToPath(new URL('.', import.meta.url)),
    dataDir,
  });
  try {
    const session = await harness.createSession({ cwd: workspace });
    const names = new Map<string, string>();
    const decisions: { name: string; decision: string; reason?: string }[] = [];
    for await (const event of session.run('Tidy up the notes.', { approve: notesOnly })) {
      if (event.type === 'tool/call') names.set(event.data.callId, event.data.name);
      if (event.type === 'approval/decided') {
        const { callId, decision, reason } = (event as SessionEvent<'approval/decided'>).data;
        decisions.push({ name: names.get(callId)!, decision, ...(reason ? { reason } : {}) });
      }
    }
    return {
      decisions,
      summaryWritten: existsSync(join(workspace, 'notes/summary.md')),
      sourceUntouched: readFileSync(join(workspace, 'src/ledger.ts'), 'utf8') === source,
      notesKept: existsSync(join(workspace, 'notes/todo.md')),
    };
  } finally {
    await harness.dispose();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(workspace, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
