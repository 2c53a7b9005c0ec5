/**
 * `npm start`: the main job, offline, first try. Copies `cookbook/demo-workspace/` to a temporary
 * folder, runs `harness run` on it with the scripted default model (it lists the files, reads one and
 * answers; `--approve read-only` lets its reads run), then says how to replay the journal. Journals go
 * to `$HARNESS_HOME/sessions` (default `~/.harness/sessions`; created when missing).
 */
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { projectRoot, processIo } from './env.ts';
import { exitAfterFlush, installProcessHandlers, STOP_FLUSH_MS, stopRequested } from './lifecycle.ts';
import { main } from './main.ts';

const io = processIo();
installProcessHandlers(io);
const workspace = mkdtempSync(join(tmpdir(), 'harness-demo-'));
cpSync(resolve(projectRoot, 'cookbook/demo-workspace'), workspace, { recursive: true });
io.out.write(`${io.c.dim(`demo workspace: ${workspace} (a copy of cookbook/demo-workspace)`)}\n${io.c.bold('$ harness run "What is in this workspace?"')}\n\n`);
const code = await main(['run', 'What is in this workspace?', '--cwd', workspace, '--approve', 'read-only', ...process.argv.slice(2)], io);
if (code === 0) io.out.write(`\n${io.c.dim('Next: replay that journal (above), list sessions with `node bin/harness.js sessions`, or chat with `node bin/harness.js chat`.')}\n`);
const stop = stopRequested();
await exitAfterFlush(stop?.exitCode ?? code, stop ? STOP_FLUSH_MS : undefined);
