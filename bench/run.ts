/**
 * `npm run bench` — runs every benchmark and writes bench/RESULTS.md; `npm run bench -- <name> …`
 * runs the named ones (bus, assembler, journal, stream, hotswap, memory, serve, store, startup, otel, reload, abort, redactor) and updates their
 * sections (the other sections keep their last figures, each marked with when it was measured).
 *
 * Every figure is a ratio against a baseline measured in the same run, with the median of several
 * interleaved repetitions and its min–max, the target, and MET / MISSED. Results are kept in
 * bench/results.json (the source of RESULTS.md). The stream bench needs the peers in
 * bench/node_modules: it installs them (`npm ci --prefix bench`) when missing, unless
 * BENCH_NO_INSTALL=1, in which case the peer rows say SKIPPED with that command.
 * `npm run bench -- --render` re-renders RESULTS.md from results.json (with bench/notes/<name>.md,
 * the hand-written reading of a section's figures) without measuring.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, harnessVersions, peerVersions } from './peers.ts';
import { markdownTable, printResult, targetRows, verdict, type BenchResult } from './support.ts';

const BENCHES = ['bus', 'assembler', 'journal', 'stream', 'hotswap', 'memory', 'serve', 'store', 'startup', 'otel', 'reload', 'abort', 'redactor'] as const;
type BenchName = (typeof BENCHES)[number];

interface Machine {
  readonly date: string;
  readonly cpu: string;
  readonly cores: number;
  readonly ramGiB: number;
  readonly loadAverage: string;
  readonly node: string;
  readonly platform: string;
}

interface Stored {
  readonly machine: Machine;
  readonly versions: Record<string, string>;
  readonly results: Partial<Record<BenchName, BenchResult & { readonly measuredAt: string; readonly durationS: number }>>;
}

const RESULTS_JSON = join(BENCH_DIR, 'results.json');
const RESULTS_MD = join(BENCH_DIR, 'RESULTS.md');

function machine(): Machine {
  const [one, five, fifteen] = loadavg();
  return {
    date: new Date().toISOString(),
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    ramGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    loadAverage: `${one!.toFixed(2)} / ${five!.toFixed(2)} / ${fifteen!.toFixed(2)} (1 / 5 / 15 min, at start)`,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}

function versions(): Record<string, string> {
  const root = harnessVersions();
  const peers = peerVersions();
  return {
    ...Object.fromEntries(Object.entries(root).map(([name, version]) => [`harness: ${name}`, version])),
    ...Object.fromEntries(Object.entries(peers).map(([name, version]) => [`bench peers: ${name}`, version])),
  };
}

function render(stored: Stored): string {
  const m = stored.machine;
  const out: string[] = [];
  out.push('# Benchmark results');
  out.push('');
  out.push('Written by `npm run bench` (bench/run.ts) — do not edit by hand. Every figure is a ratio against a baseline');
  out.push('measured in the same run: the median of several interleaved repetitions, with the min–max of the');
  out.push('repetitions in brackets. Times are process CPU time unless a table says otherwise.');
  out.push('');
  out.push('## Machine');
  out.push('');
  out.push(
    markdownTable([
      { what: 'date of the last run', value: m.date },
      { what: 'CPU', value: m.cpu },
      { what: 'cores', value: m.cores },
      { what: 'RAM', value: `${m.ramGiB} GiB` },
      { what: 'load average', value: m.loadAverage },
      { what: 'Node', value: `${m.node} (${m.platform})` },
    ]),
  );
  out.push('');
  out.push(
    'Versions: ' +
      Object.entries(stored.versions)
        .map(([name, version]) => `${name} ${version}`)
        .join(', ') +
      '.',
  );
  out.push('');
  out.push('## Targets');
  out.push('');
  const all = BENCHES.flatMap((name) => (stored.results[name]?.targets ?? []).map((t) => ({ bench: name, measure: t.what, figure: t.figure, target: t.target, result: verdict(t.met) })));
  out.push(all.length ? markdownTable(all) : '(nothing measured yet)');
  const missed = all.filter((t) => t.result === 'MISSED');
  out.push('');
  out.push(missed.length === 0 ? 'Every measured target is MET.' : `**${missed.length} target(s) MISSED:** ${missed.map((t) => `${t.bench}: ${t.measure}`).join('; ')}. See the sections below.`);
  for (const name of BENCHES) {
    const result = stored.results[name];
    out.push('');
    out.push(`## ${name}`);
    out.push('');
    if (result === undefined) {
      out.push(`Not run yet: \`npm run bench -- ${name}\`.`);
      continue;
    }
    if (result.summary) out.push(`${result.summary}.`);
    out.push('');
    out.push(`Measured ${result.measuredAt} (${Math.round(result.durationS)} s).`);
    for (const table of result.tables) {
      if (table.rows.length === 0) continue;
      out.push('');
      if (table.title) out.push(`**${table.title}**`, '');
      out.push(markdownTable(table.rows));
    }
    if (result.targets.length > 0) {
      out.push('');
      out.push(markdownTable(targetRows(result.targets)));
    }
    if (result.notes?.length) {
      out.push('');
      for (const note of result.notes) out.push(`- ${note}`);
    }
    // The reading of the figures (a target missed and why, with its profile): hand-written, kept
    // in bench/notes/<name>.md and shown under the measured section.
    const analysis = join(BENCH_DIR, 'notes', `${name}.md`);
    if (existsSync(analysis)) out.push('', readFileSync(analysis, 'utf8').trimEnd());
  }
  out.push('');
  return out.join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((arg) => arg !== '--');
  if (args.includes('--render')) {
    // Re-renders RESULTS.md from results.json (after editing bench/notes/*.md), measuring nothing.
    writeFileSync(RESULTS_MD, render(JSON.parse(readFileSync(RESULTS_JSON, 'utf8')) as Stored));
    console.log(`bench: wrote ${RESULTS_MD}`);
    return;
  }
  const unknown = args.filter((arg) => !(BENCHES as readonly string[]).includes(arg));
  if (unknown.length > 0) {
    console.error(`unknown bench: ${unknown.join(', ')}. Benches: ${BENCHES.join(', ')}.`);
    process.exit(2);
  }
  const selected: readonly BenchName[] = args.length ? (args as BenchName[]) : BENCHES;
  const previous: Stored | undefined = existsSync(RESULTS_JSON) ? (JSON.parse(readFileSync(RESULTS_JSON, 'utf8')) as Stored) : undefined;
  const results: Stored['results'] = { ...(previous?.results ?? {}) };
  const atStart = machine();
  console.log(`bench: ${selected.join(', ')} on ${atStart.cpu} × ${atStart.cores}, ${atStart.ramGiB} GiB, load ${atStart.loadAverage}, Node ${atStart.node}`);
  let failed = false;
  let wrote = false;
  for (const name of selected) {
    const started = performance.now();
    console.error(`bench: running ${name} …`);
    try {
      const module = (await import(`./${name}.ts`)) as { run(): Promise<BenchResult> };
      const result = await module.run();
      printResult(result);
      results[name] = { ...result, measuredAt: new Date().toISOString(), durationS: (performance.now() - started) / 1000 };
    } catch (error) {
      failed = true;
      console.error(`bench ${name} failed:`, error);
      continue; // nothing measured: the files keep the last run's machine and figures
    }
    // Save as we go: a later failure keeps what was measured.
    const stored: Stored = { machine: atStart, versions: versions(), results };
    writeFileSync(RESULTS_JSON, `${JSON.stringify(stored, null, 2)}\n`);
    writeFileSync(RESULTS_MD, render(stored));
    wrote = true;
  }
  console.log(wrote ? `\nbench: wrote ${RESULTS_MD}` : `\nbench: nothing measured; ${RESULTS_MD} is unchanged`);
  if (failed) process.exitCode = 1;
}

await main();
// Child processes and servers are gone; a stray handle must not keep `npm run bench` alive.
process.exit(process.exitCode ?? 0);
