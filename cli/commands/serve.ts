/**
 * `harness serve`: the sessions of the data directory over HTTP + SSE (plugins/serve). Settings come
 * from the serve plugin's config when the config loads it, each flag overriding its key; without it
 * the plugin is loaded with its defaults. Prints the address (and the token, when it generated one),
 * then serves until Ctrl-C, SIGTERM or SIGHUP: running turns are aborted and journaled, streams end,
 * journals close.
 */
import { resolve } from 'node:path';
import type { Harness } from '../../runtime/index.ts';
import servePlugin, { checkToken, TOKEN_ENV, type ServeService, type StartOptions } from '../../plugins/serve/index.ts';
import type { Io } from '../env.ts';
import { holdExitUntil, onStop, untilStopped } from '../lifecycle.ts';
import { checkWorkspace, openHarness, storeName, type GlobalOptions } from '../setup.ts';

export interface ServeOptions {
  readonly host?: string;
  readonly port?: number;
  readonly queue?: string;
  readonly cwd?: string;
  readonly approve?: string;
  readonly approvalTimeoutMs?: number;
  readonly maxBodyBytes?: number;
}

export async function serveCommand(options: ServeOptions, globals: GlobalOptions, io: Io): Promise<number> {
  const cwd = options.cwd ? checkWorkspace(resolve(options.cwd), '--cwd') : undefined;
  // What can be checked before the config loads fails first.
  checkToken();
  const harness = await openHarness(globals, io);
  try {
    const service = await serveService(harness);
    const start: StartOptions = {
      ...(options.host ? { host: options.host } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
      ...(options.queue ? { queue: options.queue } : {}),
      ...(options.approve ? { approvalPolicy: options.approve } : {}),
      ...(options.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
      ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
      ...(cwd ? { cwd } : {}),
    };
    const server = await service.start(harness, start);
    io.out.write(`harness serve: listening on ${server.url} (sessions in ${storeName(harness)})${server.queue ? '; a worker of the turn queue' : ''}\n`);
    if (server.tokenGenerated) io.out.write(`token: ${server.token}\n(set ${TOKEN_ENV} to choose it; send it as "Authorization: Bearer <token>")\n`);
    if (server.host !== '127.0.0.1' && server.host !== '::1')
      io.err.write(io.c.yellow(`warning: bound to ${server.host}: anyone who can reach it and has the token can run tools in your workspaces\n`));
    // A stop request starts the close at once (running turns aborted, journaled, their journals
    // closed), and the process does not exit before it is done — not even on a second signal, which
    // a closed terminal (the kernel's SIGHUP and the shell's) or a supervisor killing a process group
    // delivers right after the first.
    const disposeStop = onStop(() => holdExitUntil(server.close()));
    try {
      const code = await untilStopped();
      await server.close();
      return code;
    } finally {
      disposeStop();
    }
  } finally {
    await harness.dispose();
  }
}

/** The serve service of the config's serve plugin, or of the plugin loaded now with its defaults. */
async function serveService(harness: Harness): Promise<ServeService> {
  const provided = harness.kernel.service<ServeService>('serve');
  if (provided) return provided;
  await harness.host.load({ plugin: servePlugin });
  return harness.kernel.service<ServeService>('serve')!;
}
