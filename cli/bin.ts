/** The `harness` command's entry: `bin/harness.js` imports this module (built: dist/cli/bin.js). */
import { runCli } from './main.ts';

await runCli(process.argv.slice(2));
