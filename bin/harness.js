#!/usr/bin/env node
// The `harness` command: registers tsx (the runtime is TypeScript, run as is), then hands over to
// cli/main.ts.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../cli/main.ts');
await runCli(process.argv.slice(2));
