/**
 * Cookbook: an approval policy — an `ApproveFn` of your own.
 * Run: npx tsx cookbook/approval-policy.ts
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openWorkspace } from '../plugins/tools-workspace/index.ts';
import { createHarness, type ApproveFn, type SessionEvent } from '../runtime/index.ts';

/**
 * Reads run; writes run only inside `notes/` of the workspace `cwd`; commands never run. Every
 * decision says who made it and why — the loop journals it as `approval/decided`.
 *
 * The path is judged where it really leads: it is resolved exactly as the file tools resolve it
 * (tools-workspace's `openWorkspace(…).resolve`: `..` and symlinks followed, also for a file that
 * does not exist yet), so `notes/../src/ledger.ts` or a symlink `notes/link -> ../src` is judged as
 * `src/…`, and a path that leads out of the workspace is refused.
 */
export function notesOnly(cwd: string): ApproveFn {
  const by = 'policy:notes-only';
  return async (request) => {
    if (request.permission === 'read') return { decision: 'allow', decidedBy: by };
    if (request.name !== 'write_file' && request.name !== 'edit_file') return { decision: 'deny', decidedBy: by, reason: `${request.name} is not allowed here` };
    const path = String((request.input as { path?: unknown }).path); // input is already parsed by the tool's schema
    let rel: string;
    try {
      rel = (await (await openWorkspace(undefined, cwd)).resolve(path)).rel;
    } catch {
      return { decision: 'deny', decidedBy: by, reason: `${path} is outside the workspace` };
    }
    if (rel.startsWith('notes/')) return { decision: 'allow', decidedBy: by };
    return { decision: 'deny', decidedBy: by, reason: `writes go to notes/ only, not ${rel}${rel === path ? '' : ` (${path})`}` };
  };
}

export async function main(): Promise<{
  decisions: { name: string; decision: string; reason?: string }[];
  summaryWritten: boolean;
  sourceUntouched: boolean;
  notesKept: boolean;
  nothingOutside: boolean;
}> {
  const dataDir = mkdtempSync(join(tmpdir(), 'harness-cookbook-'));
  const workspace = mkdtempSync(join(tmpdir(), 'harness-cookbook-ws-'));
  const outside = mkdtempSync(join(tmpdir(), 'harness-cookbook-outside-'));
  cpSync(fileURLToPath(new URL('demo-workspace', import.meta.url)), workspace, { recursive: true });
  // Two ways out of notes/ that a string check would miss: a symlink to src/, and one out of the workspace.
  symlinkSync('../src', join(workspace, 'notes/link'));
  symlinkSync(outside, join(workspace, 'notes/out'));
  const source = readFileSync(join(workspace, 'src/ledger.ts'), 'utf8');
  const harness = await createHarness({
    config: {
      defaults: { provider: 'scripted', model: 'tidy-notes' },
      plugins: [{ module: '../plugins/llm-scripted/index.ts', config: { scripts: { 'tidy-notes': './scripts/tidy-notes.json' } } }, { module: '../plugins/tools-workspace/index.ts' }],
    },
    baseDir: fileURLToPath(new URL('.', import.meta.url)),
    dataDir,
  });
  try {
    const session = await harness.createSession({ cwd: workspace });
    const names = new Map<string, string>();
    const decisions: { name: string; decision: string; reason?: string }[] = [];
    for await (const event of session.run('Tidy up the notes.', { approve: notesOnly(workspace) })) {
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
      nothingOutside: !existsSync(join(outside, 'escaped.md')),
    };
  } finally {
    await harness.dispose();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(workspace, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(await main());
