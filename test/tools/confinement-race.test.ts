/**
 * Confinement under a symlink-swap race (issue #16, item 3): another process in the workspace keeps
 * swapping the directory `d` for a symlink to a folder outside and back, while read_file, edit_file,
 * list_dir, grep and write_file work on paths under `d` for a few seconds. A path checked inside
 * must never be used outside: 0 reads of outside content, 0 files written or changed outside.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Harness } from '../../runtime/index.ts';
import { call, loadTools, tempDir, text, type TempDir } from './support.ts';

const RACE_MS = 3000;
const OUTSIDE_MARK = 'OUTSIDE-CONTENT-7c1d';

let harness: Harness;
let ws: TempDir;
let outside: TempDir;
beforeAll(async () => {
  harness = await loadTools();
  ws = tempDir('race-ws');
  outside = tempDir('race-out');
  ws.write('d/f.txt', 'inside\n');
  outside.write('f.txt', `${OUTSIDE_MARK}\n`);
});
afterAll(async () => {
  await harness.dispose();
  ws.cleanup();
  outside.cleanup();
});

/** A separate process swapping `d` for a symlink to `outside` and back, as fast as it can, for `ms`. */
function startSwapper(ms: number): Promise<number> {
  const script = `
    const fs = require('node:fs');
    const [ws, out, ms] = process.argv.slice(1);
    const end = Date.now() + Number(ms);
    const pause = new Int32Array(new SharedArrayBuffer(4));
    let swaps = 0;
    while (Date.now() < end) {
      // Each state held a moment (and of varying length), so checks and uses fall on either side.
      try { fs.renameSync(ws + '/d', ws + '/d.real'); fs.symlinkSync(out, ws + '/d'); } catch {}
      Atomics.wait(pause, 0, 0, swaps % 3);
      try { fs.unlinkSync(ws + '/d'); fs.renameSync(ws + '/d.real', ws + '/d'); } catch {}
      Atomics.wait(pause, 0, 0, (swaps >> 1) % 3);
      swaps++;
    }
    try { fs.unlinkSync(ws + '/d'); } catch {}
    try { fs.renameSync(ws + '/d.real', ws + '/d'); } catch {}
    process.stdout.write(String(swaps));
  `;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script, ws.dir, outside.dir, String(ms)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.on('error', reject);
    child.on('exit', () => resolve(Number(out)));
  });
}

describe('confinement under a symlink-swap race', () => {
  it(`lets nothing be read or written outside in ${RACE_MS} ms of swapping`, async () => {
    const swapper = startSwapper(RACE_MS);
    const deadline = Date.now() + RACE_MS;
    let attempts = 0;
    let outsideReads = 0;
    let n = 0;
    const cwd = ws.dir;
    while (Date.now() < deadline) {
      n++;
      const outcomes = await Promise.all([
        call(harness, 'read_file', { path: 'd/f.txt' }, { cwd }),
        call(harness, 'list_dir', { path: 'd' }, { cwd }),
        call(harness, 'grep', { pattern: 'OUTSIDE', path: 'd' }, { cwd }),
        call(harness, 'write_file', { path: `d/new-${n}.txt`, content: 'written\n' }, { cwd }),
        call(harness, 'write_file', { path: `d/sub${n}/deep.txt`, content: 'written\n' }, { cwd }),
        call(harness, 'edit_file', { path: 'd/f.txt', old_string: 'inside', new_string: 'inside' }, { cwd }),
      ]);
      attempts += outcomes.length;
      for (const outcome of outcomes) if (text(outcome).includes(OUTSIDE_MARK)) outsideReads++;
    }
    const swaps = await swapper;
    expect(swaps, 'the swapper ran').toBeGreaterThan(100);
    expect(attempts).toBeGreaterThan(50);
    // Nothing outside was read, created or changed.
    expect(outsideReads).toBe(0);
    expect(readdirSync(outside.dir)).toEqual(['f.txt']);
    expect(readFileSync(join(outside.dir, 'f.txt'), 'utf8')).toBe(`${OUTSIDE_MARK}\n`);
  }, 60_000);
});
