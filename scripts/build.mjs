#!/usr/bin/env node
// `npm run build`: compiles runtime/, plugins/, cli/ and testing/ with tsc (tsconfig.build.json:
// ESM JavaScript, .d.ts, source maps) into dist/, then copies the non-TypeScript modules the code
// loads at run time (the hot-reload resolve hook), then builds the session viewer (viewer/, Vite)
// into dist/viewer/ (scripts/build-viewer.mjs). It fails when a relative import of the built
// JavaScript does not name a built .js file (scripts/dist-imports.mjs). `--if-stale` (npm pack,
// npm run check:package) skips the build when no source file is newer than the last build and dist/
// holds nothing whose source is gone; otherwise it builds again from scratch.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { badDistImports, checkDistImports } from './dist-imports.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const stamp = join(dist, '.tsbuildinfo');
const sources = ['runtime', 'plugins', 'cli', 'testing', 'stack'];
const ifStale = process.argv.includes('--if-stale');

/** Every file under the source folders (and the build's own config), for the staleness check and the asset copy. */
function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}

const inputs = () => [...sources.flatMap((dir) => [...files(join(root, dir))]), join(root, 'tsconfig.json'), join(root, 'tsconfig.build.json')];
const viewerInputs = () => [...files(join(root, 'viewer'))];

/** Whether dist/ is as the sources are: built after every source change, and no output whose source is gone. */
function fresh() {
  if (!existsSync(stamp)) return false;
  const built = statSync(stamp).mtimeMs;
  const sourceFiles = inputs();
  if ([...sourceFiles, ...viewerInputs()].some((file) => statSync(file).mtimeMs > built)) return false;
  if (!existsSync(join(dist, 'viewer', 'index.html'))) return false;
  const expected = new Set(sourceFiles.map((file) => relative(root, file).replace(/\.ts$/, '.js')));
  return [...files(dist)].every((file) => {
    const rel = relative(dist, file);
    return rel === '.tsbuildinfo' || rel.startsWith(`viewer${sep}`) || expected.has(rel.replace(/\.d\.ts(\.map)?$|\.js\.map$/, '.js'));
  });
}

if (ifStale && fresh()) process.exit(0);
rmSync(dist, { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit', cwd: root });
if (result.status !== 0) process.exit(result.status ?? 1);

// Non-TypeScript modules next to the sources (`runtime/kernel/reload-hooks.mjs`) go to the same place in dist/.
for (const file of inputs()) {
  if (/\.[cm]?js$/.test(file)) cpSync(file, join(dist, relative(root, file)));
}

// Every relative import of the built JavaScript names a built .js file (scripts/dist-imports.mjs); a dist/
// that fails is not left looking fresh to the next --if-stale.
if (badDistImports(dist).length > 0) rmSync(stamp, { force: true });
checkDistImports(dist);

// The session viewer: viewer/ → dist/viewer/ (Vite); its assets ship in the package.
const viewer = spawnSync(process.execPath, [join(root, 'scripts', 'build-viewer.mjs')], { stdio: 'inherit', cwd: root });
if (viewer.status !== 0) process.exit(viewer.status ?? 1);
