#!/usr/bin/env node
// `npm run check:package`: the package as npm would publish it passes publint (strict) and
// arethetypeswrong (ESM-only profile), every `harness-runtime/plugins/<name>` included (attw does not
// expand the `./plugins/*` pattern by itself, so each shipped plugin is named), and every relative
// import of dist/'s JavaScript names a built .js file (scripts/dist-imports.mjs; the build checks it
// too, but --if-stale may skip the build).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkDistImports } from './dist-imports.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const run = (command, args) => {
  const result = spawnSync(command, args, { stdio: 'inherit', cwd: root });
  if (result.status !== 0) process.exit(result.status ?? 1);
};
run(process.execPath, [join(root, 'scripts/build.mjs'), '--if-stale']);
checkDistImports(join(root, 'dist'));
const plugins = readdirSync(join(root, 'plugins'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => `./plugins/${entry.name}`);
run('npx', ['--no-install', 'publint', '--strict']);
run('npx', ['--no-install', 'attw', '--pack', '.', '--profile', 'esm-only', '--include-entrypoints', ...plugins]);
