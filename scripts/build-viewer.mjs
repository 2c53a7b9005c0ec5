#!/usr/bin/env node
// Builds the session viewer (viewer/, Vite) into dist/viewer/, which plugins/serve serves at /viewer/.
// `npm run build` runs it after tsc. `--out <dir>` builds elsewhere (the viewer tests build their own
// copy, so a concurrent `npm run build` that empties dist/ cannot pull the page from under them).
// `--if-stale` skips the build when <out>/index.html is newer than every viewer source (and the lock
// file); concurrent callers (test files in parallel workers) take turns through a lock directory.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outFlag = process.argv.indexOf('--out');
const out = outFlag > 0 ? resolve(process.argv[outFlag + 1]) : join(root, 'dist', 'viewer');
const page = join(out, 'index.html');
const lock = `${out}.build-lock`;

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}

function fresh() {
  if (!existsSync(page)) return false;
  const built = statSync(page).mtimeMs;
  return [...files(join(root, 'viewer')), join(root, 'package-lock.json')].every((file) => statSync(file).mtimeMs <= built);
}

function build() {
  const vite = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin', 'vite.js');
  const result = spawnSync(process.execPath, [vite, 'build', '--config', join(root, 'viewer', 'vite.config.ts'), '--outDir', out, '--emptyOutDir'], { stdio: 'inherit', cwd: root });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

if (!process.argv.includes('--if-stale')) {
  build();
  process.exit(0);
}
if (fresh()) process.exit(0);
mkdirSync(dirname(out), { recursive: true });
const until = Date.now() + 120_000;
for (;;) {
  try {
    mkdirSync(lock);
    break;
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
    // A lock older than two minutes belongs to a build that died.
    if (Date.now() - statSync(lock, { throwIfNoEntry: false })?.mtimeMs > 120_000) rmSync(lock, { recursive: true, force: true });
    if (Date.now() > until) throw new Error(`Waited 2 minutes for another viewer build (${lock}); remove it if no build runs.`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
try {
  if (!fresh()) build();
} finally {
  rmSync(lock, { recursive: true, force: true });
}
