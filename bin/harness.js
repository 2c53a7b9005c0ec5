#!/usr/bin/env node
// The `harness` command: registers tsx (the runtime is TypeScript, run as is), then hands over to
// runtime/cli/main.ts.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../runtime/cli/main.ts');
await runCli(process.argv.slice(2));
