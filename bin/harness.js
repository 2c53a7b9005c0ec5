#!/usr/bin/env node
// The `harness` command. Installed, it runs the built CLI (dist/cli/bin.js) with plain node: tsx is
// registered only later, and only to load a project's own TypeScript (its config and plugins).
// In a source checkout of Harness (cli/bin.ts next to this folder; the package ships no cli/), it runs
// the sources through tsx instead, so an edit needs no rebuild (npm test, node bin/harness.js).
import { existsSync } from 'node:fs';

const source = new URL('../cli/bin.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import('../dist/cli/bin.js');
}
