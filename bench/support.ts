/**
 * Shared pieces of the benchmarks (`npm run bench`, bench/run.ts): the result shape every bench
 * returns, statistics, CPU-time measurement, table printing, and isolation helpers (a worker thread
 * or a child process per measurement).
 *
 * Conventions (issue #9): every headline figure is a RATIO against a baseline measured in the same
 * run, reported as the median of several interleaved repetitions with its min–max, next to the
 * target and a plain MET / MISSED. Times are process CPU time (`process.cpuUsage()`, user + system)
 * wherever the work is CPU-bound, so a machine busy with other sessions does not inflate them.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/** One table row: column → value (numbers are printed as they are). */
export type Row = Record<string, string | number>;

/** A target check: one figure of a bench against its target. */
export interface TargetCheck {
  /** What is measured, e.g. `Harness CPU/chunk vs raw SDK (anthropic)`. */
  readonly what: string;
  /** The figure, e.g. `1.18x (1.10–1.25)`. */
  readonly figure: string;
  /** The target, e.g. `≤ 1.25x`. */
  readonly target: string;
  /** `true` met, `false` missed, `null` no target (informational), `undefined` not measured (skipped; `figure` says why). */
  readonly met: boolean | null | undefined;
}

export interface BenchResult {
  /** The bench name (`bus`, `stream`, …). */
  readonly name: string;
  /** One line saying what the bench measures and against which baseline. */
  readonly summary?: string;
  /** Tables: the first is the main one. */
  readonly tables: readonly { readonly title?: string; readonly rows: readonly Row[] }[];
  readonly targets: readonly TargetCheck[];
  readonly notes?: readonly string[];
}

// ── Statistics ────────────────────────────────────────────────────────────────────────────────────

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function min(values: readonly number[]): number {
  let out = Number.POSITIVE_INFINITY;
  for (const value of values) if (value < out) out = value;
  return out;
}

export function max(values: readonly number[]): number {
  let out = Number.NEGATIVE_INFINITY;
  for (const value of values) if (value > out) out = value;
  return out;
}

/** Percentile by nearest rank (`p` in 0..100). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export interface Stat {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly n: number;
}

export function stat(values: readonly number[]): Stat {
  return { median: median(values), min: min(values), max: max(values), n: values.length };
}

/** Rounds to a precision that suits the magnitude (2 decimals below 10, 1 below 100, else 0). */
export function round(value: number): number {
  if (!Number.isFinite(value)) return value;
  const abs = Math.abs(value);
  return abs < 10 ? Math.round(value * 100) / 100 : abs < 100 ? Math.round(value * 10) / 10 : Math.round(value);
}

/** Rounds to `digits` decimals. */
export function fixed(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** `a / b` to 2 decimals. */
export function ratio(a: number, b: number): number {
  return Math.round((a / b) * 100) / 100;
}

/** `1.18x` */
export function times(value: number): string {
  return `${value.toFixed(2)}x`;
}

/** `12.3 (11.9–13.0)`: median with its range. */
export function spread(s: Stat, format: (value: number) => string | number = round): string {
  return `${format(s.median)} (${format(s.min)}–${format(s.max)})`;
}

/** `1.18x (1.10–1.25)`: a ratio with its range. */
export function ratioSpread(s: Stat): string {
  return `${times(s.median)} (${times(s.min)}–${times(s.max)})`;
}

/** `≤ 1.25x` check helper. */
export function check(what: string, figure: string, target: string, met: boolean | null | undefined): TargetCheck {
  return { what, figure, target, met };
}

export function verdict(met: boolean | null | undefined): string {
  return met === undefined ? 'SKIPPED' : met === null ? 'info' : met ? 'MET' : 'MISSED';
}

// ── CPU time ──────────────────────────────────────────────────────────────────────────────────────

/** Process CPU time (user + system, all threads of this process) in µs. */
export function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** CPU µs and wall ms of one synchronous call. */
export function measureCpu<T>(fn: () => T): { cpuUs: number; wallMs: number; value: T } {
  const wall = performance.now();
  const cpu = cpuMicros();
  const value = fn();
  return { cpuUs: cpuMicros() - cpu, wallMs: performance.now() - wall, value };
}

/** CPU µs and wall ms of one asynchronous call. */
export async function measureCpuAsync<T>(fn: () => Promise<T>): Promise<{ cpuUs: number; wallMs: number; value: T }> {
  const wall = performance.now();
  const cpu = cpuMicros();
  const value = await fn();
  return { cpuUs: cpuMicros() - cpu, wallMs: performance.now() - wall, value };
}

/** Runs a full GC when the process was started with `--expose-gc` (a no-op otherwise). */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

// ── Printing ──────────────────────────────────────────────────────────────────────────────────────

function columnsOf(rows: readonly Row[]): string[] {
  const columns: string[] = [];
  for (const row of rows) for (const key of Object.keys(row)) if (!columns.includes(key)) columns.push(key);
  return columns;
}

/** A plain-text table (first column left-aligned, the rest right-aligned). */
export function textTable(rows: readonly Row[]): string {
  const columns = columnsOf(rows);
  const cells = [columns, ...rows.map((row) => columns.map((c) => String(row[c] ?? '')))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  const line = (values: string[]) => values.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  return [line(columns), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/** A Markdown table. */
export function markdownTable(rows: readonly Row[]): string {
  const columns = columnsOf(rows);
  const escapeCell = (value: string) => value.replace(/\|/g, '\\|');
  // Numbers right-aligned, text left-aligned.
  const numeric = columns.map((c) => rows.every((row) => typeof row[c] === 'number'));
  const out = [`| ${columns.map(escapeCell).join(' | ')} |`, `| ${columns.map((_, i) => (numeric[i] ? '---:' : '---')).join(' | ')} |`];
  for (const row of rows) out.push(`| ${columns.map((c) => escapeCell(String(row[c] ?? ''))).join(' | ')} |`);
  return out.join('\n');
}

export function targetRows(targets: readonly TargetCheck[]): Row[] {
  return targets.map((t) => ({ measure: t.what, figure: t.figure, target: t.target, result: verdict(t.met) }));
}

/** Prints a result to stdout (what `npx tsx bench/<name>.ts` shows). */
export function printResult(result: BenchResult): void {
  console.log(`\n# ${result.name}${result.summary ? ` — ${result.summary}` : ''}`);
  for (const table of result.tables) {
    if (table.rows.length === 0) continue;
    if (table.title) console.log(`\n## ${table.title}`);
    console.log(textTable(table.rows));
  }
  if (result.targets.length > 0) {
    console.log('\n## targets');
    console.log(textTable(targetRows(result.targets)));
  }
  for (const note of result.notes ?? []) console.log(`- ${note}`);
}

// ── Entry points and isolation ────────────────────────────────────────────────────────────────────

/** True when the module at `url` is the process's entry script. */
export function isMain(url: string): boolean {
  return process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href;
}

/** The tsx loader, as an absolute URL for `--import` (a child does not inherit tsx otherwise). */
export const TSX_IMPORT: string = import.meta.resolve('tsx');

/**
 * Runs `module` in a fresh worker thread with tsx registered, posting `data` as `workerData`; the
 * worker answers with one message (`parentPort.postMessage`). Resolves once the worker has EXITED:
 * CPU time is process-wide, so the next measurement must not share the process with its teardown.
 * Falls back to `fallback()` in this thread when a worker cannot load the module.
 */
export function inWorker<T>(moduleUrl: string, data: unknown, fallback?: () => T | Promise<T>): Promise<{ value: T; isolated: boolean }> {
  return new Promise((resolve, reject) => {
    const entry = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(moduleUrl)}); });`;
    const worker = new Worker(entry, { eval: true, workerData: data });
    let settled = false;
    let result: { value: T } | undefined;
    worker.once('message', (value: T) => {
      result = { value };
      void worker.terminate();
    });
    worker.once('error', (error) => {
      if (settled) return;
      settled = true;
      if (fallback === undefined) return reject(error);
      Promise.resolve()
        .then(fallback)
        .then((value) => resolve({ value, isolated: false }), reject);
    });
    worker.once('exit', (code) => {
      if (settled) return;
      settled = true;
      if (result !== undefined) resolve({ value: result.value, isolated: true });
      else reject(new Error(`bench worker ${moduleUrl} exited with code ${code} without an answer`));
    });
  });
}

export interface ChildOptions {
  /** Extra node flags (e.g. `--expose-gc`). */
  readonly nodeArgs?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  /** Kill the child after this long (default 10 minutes). */
  readonly timeoutMs?: number;
  /** Called with each stderr line (default: dropped unless the child fails). */
  readonly onStderr?: (line: string) => void;
}

/**
 * Runs a TypeScript module in a fresh Node process (`node --import tsx <nodeArgs> <file> <args>`)
 * and returns the JSON value of the last line it printed on stdout.
 * @throws Error with the child's stderr when it exits non-zero, prints no JSON, or times out.
 */
export function inChild<T>(moduleUrl: string, args: readonly string[], options: ChildOptions = {}): Promise<T> {
  return new Promise((resolve, reject) => {
    const file = moduleUrl.startsWith('file:') ? fileURLToPath(moduleUrl) : moduleUrl;
    const child = spawn(process.execPath, ['--import', TSX_IMPORT, ...(options.nodeArgs ?? []), file, ...args], {
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
      if (options.onStderr) for (const line of text.split('\n')) if (line) options.onStderr(line);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 600_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const last = stdout.trim().split('\n').at(-1) ?? '';
      if (code !== 0) return reject(new Error(`bench child ${file} ${args.join(' ')} failed (${signal ?? `exit ${code}`}):\n${stderr.slice(-4000)}`));
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`bench child ${file} ${args.join(' ')} printed no JSON result:\n${stdout.slice(-2000)}\n${stderr.slice(-2000)}`));
      }
    });
  });
}

/** Prints the one JSON line a child answers with (see {@link inChild}). */
export function answer(value: unknown): void {
  process.stdout.write(`\n${JSON.stringify(value)}\n`);
}

/**
 * Interleaved repetitions: `rounds` times, each contender once, in order, and a rotating start so
 * that no contender always runs first after a pause. Returns the samples per contender.
 */
export async function interleave<K extends string, V>(rounds: number, contenders: readonly K[], measure: (contender: K, round: number) => Promise<V> | V): Promise<Record<K, V[]>> {
  const out = Object.fromEntries(contenders.map((c) => [c, [] as V[]])) as Record<K, V[]>;
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const contender = contenders[(k + round) % contenders.length]!;
      out[contender].push(await measure(contender, round));
    }
  }
  return out;
}

/**
 * Reads a comma-separated list of known names from the environment (`BENCH_*`); unset or empty →
 * every known name. Checked before anything is measured: a misspelt name found after a 40-minute
 * run would throw the run away.
 * @throws Error naming the variable, the unknown entries and the known ones.
 */
export function envList<T extends string>(name: string, known: readonly T[]): readonly T[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return known;
  const items = raw.split(',').map((item) => item.trim());
  const unknown = items.filter((item) => !(known as readonly string[]).includes(item));
  if (unknown.length > 0) {
    throw new Error(
      `${name} names ${unknown.map((item) => JSON.stringify(item)).join(', ')}, which ${unknown.length === 1 ? 'is' : 'are'} not known; known: ${known.join(', ')}. Unset it for all of them.`,
    );
  }
  return items as T[];
}

/**
 * Reads an integer ≥ `min` (default 1) from the environment (`BENCH_*`); unset or empty → `fallback`.
 * @throws Error naming the variable when it holds anything else (`abc`, `-3`, `2.5`, `0` where the
 *   least is 1): a measurement run with a setting silently replaced by the default would be mislabelled.
 */
export function envInt(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) {
    throw new Error(`${name} must be an integer ≥ ${min}; got ${JSON.stringify(raw)}. Unset it for the default (${fallback}).`);
  }
  return value;
}
