/**
 * Where the CLI is and how it talks: the project root, the config it loads, the command that runs
 * it again, colours and the output streams.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pc from 'picocolors';
import { CONFIG_FILE_NAMES, secrets } from '../runtime/index.ts';

/** picocolors' colour functions (what `pc.createColors` returns). */
export type Colors = ReturnType<typeof pc.createColors>;

/**
 * The package's folder: the nearest one above this module holding a package.json (cli/ in a source
 * checkout, dist/cli/ when built or installed).
 */
export const projectRoot: string = packageRoot(dirname(fileURLToPath(import.meta.url)));

function packageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(resolve(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return resolve(from, '..');
  }
}

/** The CLI's version (package.json). */
export function cliVersion(): string {
  try {
    return (JSON.parse(readFileSync(resolve(projectRoot, 'package.json'), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export { CONFIG_FILE_NAMES };

/**
 * The config a command loads, and why that one: `--config <path>`, else `$HARNESS_CONFIG`, else a
 * `harness.config.{ts,mts,js,mjs}` in the working directory, else none (`path` undefined): the
 * built-in stack (stack/index.ts `defaultConfig()`: every shipped plugin, the scripted model as the
 * default).
 */
export function configSource(option: string | undefined, cwd = process.cwd()): { path?: string; from: string } {
  if (option) return { path: resolve(cwd, option), from: 'from --config' };
  if (process.env.HARNESS_CONFIG) return { path: resolve(cwd, process.env.HARNESS_CONFIG), from: 'from $HARNESS_CONFIG' };
  for (const name of CONFIG_FILE_NAMES) {
    const local = resolve(cwd, name);
    if (existsSync(local)) return { path: local, from: `the working directory's ${name}` };
  }
  return { from: 'the built-in stack: no harness.config.ts in the working directory' };
}

/** How to name the config in a message: its path, or "the built-in stack". */
export function configName(source: { path?: string }): string {
  return source.path ?? 'the built-in stack';
}

/**
 * How to run this CLI again, for hints like "replay: harness replay <id>": `harness` when it was
 * started through an installed `harness` link, else `node <path of bin/harness.js>` (relative to the
 * working directory when that is shorter).
 */
export function selfCommand(cwd = process.cwd()): string {
  const script = process.argv[1] ?? '';
  if (basename(script) === 'harness') return 'harness';
  const bin = resolve(projectRoot, 'bin/harness.js');
  const rel = relative(cwd, bin);
  return `node ${!rel.startsWith('..') && !isAbsolute(rel) ? rel : bin}`;
}

/** Quotes an argument for a shell hint when it needs it. */
export function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./:@%+=-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Output streams and colours of one command. */
export interface Io {
  readonly out: NodeJS.WriteStream;
  readonly err: NodeJS.WriteStream;
  /** Colours (a no-op set when colour is off: see {@link colourEnabled}); `c.isColorSupported` says which. */
  readonly c: Colors;
  /** stdout is a terminal (spinner, cursor control). */
  readonly interactive: boolean;
}

export function processIo(): Io {
  for (const stream of [process.stdout, process.stderr]) terminalStream(stream);
  return { out: process.stdout, err: process.stderr, c: pc.createColors(colourEnabled(process.stdout)), interactive: process.stdout.isTTY === true };
}

/**
 * Whether the CLI colours what it prints — the one place this is decided (the `c` of processIo; the
 * spinner and markdown follow `c.isColorSupported`): never with `--no-color` or a non-empty
 * `NO_COLOR` (no-color.org; it wins over FORCE_COLOR); with `FORCE_COLOR` set, unless it is `0` or
 * `false` (the value chalk and Node read as "off"); else when `stream` is a terminal that is not
 * `TERM=dumb`.
 */
export function colourEnabled(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env, argv: readonly string[] = process.argv): boolean {
  if (argv.includes('--no-color') || (env.NO_COLOR ?? '') !== '') return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force !== 'false';
  return stream.isTTY === true && env.TERM !== 'dumb';
}

/**
 * `stream` as the CLI prints to it: every write through the secret redactor, and (a terminal) a
 * size of 80 × 24 while it reports 0. Idempotent; returns `stream`. processIo applies it to stdout
 * and stderr, and a renderer to whatever streams its Io has (an embedder's or a test's too), so no
 * spinner ever divides by 0 columns.
 */
export function terminalStream(stream: NodeJS.WriteStream): NodeJS.WriteStream {
  maskSecretsIn(stream);
  saneSizeOf(stream);
  return stream;
}

const MASKED = Symbol.for('harness.cli.masked-stream');
const SIZED = Symbol.for('harness.cli.sane-size-stream');

/** What a terminal that reports no size (0 × 0: `stty cols 0`, `script` without a window) is taken as. */
export const DEFAULT_COLUMNS = 80;
export const DEFAULT_ROWS = 24;

/**
 * A terminal's `columns` / `rows` read as 80 × 24 while it reports 0 (or nothing): everything that
 * divides by the width (the spinner counts a line as ⌈width ÷ columns⌉ rows to erase) would otherwise
 * get Infinity — the spinner then erased upwards forever in one synchronous loop, and the SIGTERM
 * handler never ran. Node sets both on a resize (SIGWINCH) through the setters; a real size shows.
 */
function saneSizeOf(stream: NodeJS.WriteStream): void {
  const holder = stream as NodeJS.WriteStream & { [SIZED]?: true };
  if (holder[SIZED] || !stream.isTTY) return;
  holder[SIZED] = true;
  for (const [key, fallback] of [
    ['columns', DEFAULT_COLUMNS],
    ['rows', DEFAULT_ROWS],
  ] as const) {
    let reported: unknown = stream[key];
    Object.defineProperty(stream, key, {
      configurable: true,
      enumerable: true,
      get: () => (typeof reported === 'number' && reported > 0 ? reported : fallback),
      set: (value: unknown) => {
        reported = value;
      },
    });
  }
}

/**
 * Every write to `stream` goes through the secret redactor (known API keys, vault values): the one
 * door everything printed passes, a provider's error text and a command's live output included.
 * A value split across two writes is not caught here; the journal and the tool result mask it whole.
 */
function maskSecretsIn(stream: NodeJS.WriteStream): void {
  const holder = stream as NodeJS.WriteStream & { [MASKED]?: true };
  if (holder[MASKED]) return;
  holder[MASKED] = true;
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  stream.write = ((chunk: unknown, ...rest: unknown[]): boolean => {
    const redactor = secrets();
    if (redactor.size > 0) {
      if (typeof chunk === 'string') chunk = redactor.redact(chunk);
      else if (chunk instanceof Uint8Array) {
        const text = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('utf8');
        if (redactor.holds(text)) chunk = redactor.redact(text);
      }
    }
    return write(chunk, ...rest);
  }) as NodeJS.WriteStream['write'];
}

/**
 * Writes and resolves once the stream has taken the text (so an exit right after loses nothing), or
 * once it failed or closed (a reader that went away is not waited for).
 */
export function writeAll(stream: NodeJS.WriteStream, text: string): Promise<void> {
  return new Promise((done) => {
    if (stream.destroyed || stream.writableEnded) return done();
    let ok: boolean;
    try {
      ok = stream.write(text);
    } catch {
      return done();
    }
    if (ok) return done();
    const finish = () => {
      stream.off('drain', finish);
      stream.off('error', finish);
      stream.off('close', finish);
      done();
    };
    stream.once('drain', finish);
    stream.once('error', finish);
    stream.once('close', finish);
  });
}
