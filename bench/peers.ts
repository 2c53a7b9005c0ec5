/**
 * The benchmark peers (Vercel AI SDK, pi-ai): installed for the benchmarks only, in
 * `bench/node_modules` from `bench/package.json` + `bench/package-lock.json`, never in the root
 * install. `npm run bench` installs them when they are missing (`npm ci --prefix bench`); with
 * `BENCH_NO_INSTALL=1`, or when the install fails, it prints that command and the stream bench shows
 * the peer rows as SKIPPED.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const BENCH_DIR: string = dirname(fileURLToPath(import.meta.url));
export const PEER_PACKAGES = ['ai', '@ai-sdk/openai', '@ai-sdk/anthropic', '@mariozechner/pi-ai'] as const;
export const INSTALL_COMMAND = 'npm ci --prefix bench';

function packageJson(root: string, name: string): { version?: string } | undefined {
  const path = join(root, 'node_modules', name, 'package.json');
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, 'utf8')) as { version?: string };
}

export function missingPeers(): string[] {
  return PEER_PACKAGES.filter((name) => packageJson(BENCH_DIR, name) === undefined);
}

/**
 * Makes sure the peers are installed. Returns `undefined` when they are, else why they are not.
 * Installs them (`npm ci --prefix bench`, output on stderr) unless `BENCH_NO_INSTALL` is set.
 */
export function ensurePeers(log: (line: string) => void = (line) => console.error(line)): string | undefined {
  const missing = missingPeers();
  if (missing.length === 0) return undefined;
  if (process.env.BENCH_NO_INSTALL) {
    const why = `peers not installed (${missing.join(', ')}); BENCH_NO_INSTALL is set. Install them with: ${INSTALL_COMMAND}`;
    log(why);
    return why;
  }
  log(`bench: installing the benchmark peers (${missing.join(', ')}): ${INSTALL_COMMAND}`);
  const result = spawnSync('npm', ['ci', '--prefix', BENCH_DIR, '--no-audit', '--no-fund'], { stdio: ['ignore', 2, 2], encoding: 'utf8' });
  const still = missingPeers();
  if (result.status === 0 && still.length === 0) return undefined;
  const why = `peers could not be installed (${result.error?.message ?? `npm exited with ${result.status}`}); install them with: ${INSTALL_COMMAND}`;
  log(why);
  return why;
}

/** Imports a peer package from bench/node_modules (a plain dynamic import: the main tsconfig never needs its types). */
export async function importPeer<T>(name: (typeof PEER_PACKAGES)[number]): Promise<T> {
  const specifier: string = name;
  return (await import(specifier)) as T;
}

/**
 * Imports a package of the ROOT install (the SDKs Harness uses), by its ESM entry file: a bare
 * `import('openai')` from a file under bench/ would resolve bench/node_modules first, where pi-ai
 * brings its own (older) `openai` and `@anthropic-ai/sdk`. The URL is the one the plugins import, so
 * this is the same module instance.
 */
export async function importRootPackage<T>(name: 'openai' | '@anthropic-ai/sdk'): Promise<T> {
  return (await import(pathToFileURL(join(BENCH_DIR, '..', 'node_modules', name, 'index.mjs')).href)) as T;
}

/** Versions of the peers and of the SDK copies they bring (pi-ai pins its own `openai` and `@anthropic-ai/sdk`). */
export function peerVersions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of [...PEER_PACKAGES, '@ai-sdk/provider-utils', 'openai', '@anthropic-ai/sdk']) {
    out[name] = packageJson(BENCH_DIR, name)?.version ?? 'not installed';
  }
  return out;
}

/** Versions of the root packages on the measured paths. */
export function harnessVersions(): Record<string, string> {
  const root = join(BENCH_DIR, '..');
  const out: Record<string, string> = {};
  for (const name of ['openai', '@anthropic-ai/sdk', 'tapable', 'eventemitter3', 'immer', 'zod', 'tsx']) out[name] = packageJson(root, name)?.version ?? 'not installed';
  return out;
}
