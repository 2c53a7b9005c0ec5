/**
 * `harness view [session]`: the session viewer (issue 19) on 127.0.0.1, read-only — the serve API
 * with every request but GET refused (`READ_ONLY`), over the harness's store (the data directory's
 * file store, or the store of `--store`, e.g. `postgres://…`). A session another process is running
 * is live: streams follow the store's tail (the journal file, or LISTEN/NOTIFY). Prints the
 * page's URL with a token in its fragment (`#token=…`: the page keeps it in sessionStorage and
 * takes it out of the address bar; a fragment is never sent to a server), then serves until Ctrl-C,
 * SIGTERM or SIGHUP.
 */
import { existsSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { HarnessError } from '../../runtime/index.ts';
import { sessionsDir } from '../../runtime/internal.ts';
import { checkToken, defaultViewerDir, serveConfigSchema, startServer } from '../../plugins/serve/index.ts';
import type { Io } from '../env.ts';
import { untilStopped } from '../lifecycle.ts';
import { openHarnessForReading, sessionPath, sessionRef, storeName, type GlobalOptions } from '../setup.ts';

export interface ViewOptions {
  readonly port?: number;
}

export async function viewCommand(session: string | undefined, options: ViewOptions, globals: GlobalOptions, io: Io): Promise<number> {
  checkToken();
  const harness = await openHarnessForReading(globals, io);
  try {
    let id: string | undefined;
    if (session !== undefined && harness.store.kind !== 'file') {
      id = await sessionRef(session, harness); // an id or a unique prefix of one, in the store of --store
    } else if (session !== undefined) {
      const path = sessionPath(session, harness.dataDir);
      if (!existsSync(path)) throw new HarnessError('SESSION_NOT_FOUND', `No session ${session} in ${sessionsDir(harness.dataDir)}; \`harness sessions\` lists them.`, { details: { session } });
      if (dirname(path) !== sessionsDir(harness.dataDir)) {
        throw new HarnessError(
          'INVALID_ARGUMENTS',
          `harness view shows the sessions of the data directory (${sessionsDir(harness.dataDir)}), and ${path} is not there; pass --data-dir <dir> with the folder whose sessions/ holds it.`,
        );
      }
      id = basename(path, '.jsonl');
    }
    if (!existsSync(defaultViewerDir())) io.err.write(io.c.yellow(`warning: the viewer is not built (${defaultViewerDir()}); run \`npm run build\` in the package first\n`));
    const server = await startServer(harness, serveConfigSchema.parse({ port: options.port ?? 0, host: '127.0.0.1' }), { readOnly: true });
    const url = `${server.url}/viewer/${id === undefined ? '' : `?session=${encodeURIComponent(id)}`}#token=${encodeURIComponent(server.token)}`;
    io.out.write(`harness view: ${url}\n${io.c.dim(`read-only, sessions in ${storeName(harness)}; Ctrl-C stops`)}\n`);
    const code = await untilStopped();
    await server.close();
    return code;
  } finally {
    await harness.dispose();
  }
}
