/**
 * Bus benchmark (kernel issue, "Benchmark"): a waterfall dispatch through `HookBus` with 1, 10 and 50
 * pass-through middlewares, against hand-composed closures doing the same work.
 *
 * Every middleware is `(payload, next) => next()`: it calls the rest of the chain with the payload
 * it received and returns its result; the innermost step returns a number. Contenders:
 * - `bus`: `bus.waterfall('bench/chain', payload, inner)` on a HookBus with those middlewares;
 * - `hand`: what a programmer would write without a bus — per call, the nested closures
 *   `(a0) => m0(a0, (x1) => m1(x1 ?? a0, (x2) => … inner(xN ?? aN-1)))` written out for that size:
 *   the one `next` closure per middleware and per dispatch that any `next(payload?)` chain needs;
 * - `hand-loop`: the generic hand composition for any size, building
 *   `(p) => m(p, (q) => down(q ?? p))` per level per call.
 * The same middleware function objects are used on every side.
 *
 * Run: `npx tsx bench/bus.ts` (or `npm run bench -- bus`); `BENCH_SIZES=10` measures one size. Each
 * size runs in `BENCH_BUS_WORKERS` (3) fresh worker threads (a fresh JIT state each, as the
 * hand-composed code is fresh per size: whether V8 inlines the whole chain differs between JIT
 * states, so one worker is one draw); contenders are timed in interleaved repetitions after a
 * warm-up, in process CPU time; the median ns/dispatch is reported, and the median over workers of
 * each worker's median bus/hand ratio. Target (issue): the bus within 2x of `hand` at 10 middlewares.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { HookBus, type Next, type WaterfallHook } from '../runtime/kernel/bus.ts';
import { check, inWorker, isMain, median, printResult, ratioSpread, round, stat, type BenchResult, type Row } from './support.ts';

declare module '../runtime/kernel/bus.ts' {
  interface HookMap {
    'bench/chain': WaterfallHook<number, number>;
  }
}

type Middleware = (payload: number, next: Next<number, number>) => number;
type Dispatch = (payload: number) => number;

const SIZES: readonly number[] = process.env.BENCH_SIZES ? process.env.BENCH_SIZES.split(',').map(Number) : [1, 10, 50];
const REPETITIONS = 21;
/** Each timed repetition runs about this long. */
const TARGET_MS = 15;

/** Pass-through middlewares: distinct closures of one shape, as a chain of plugins would have. */
function makeMiddlewares(count: number): Middleware[] {
  const make = (): Middleware => (_payload, next) => next();
  return Array.from({ length: count }, make);
}

const inner = (payload: number): number => payload + 1;

/**
 * The hand-composed chain for `count` middlewares, written out literally (generated once, so that
 * each level has its own call site, as hand-written nesting would):
 * `(a0) => m[0](a0, (x1) => { const a1 = x1 === undefined ? a0 : x1; return m[1](a1, …) })`.
 */
function handComposed(middlewares: Middleware[], innermost: Dispatch): Dispatch {
  const count = middlewares.length;
  let body = `inner(a${count})`;
  for (let level = count - 1; level >= 0; level--) {
    const nextLevel = level + 1;
    body =
      level === count - 1
        ? `m${level}(a${level}, (x${nextLevel}) => inner(x${nextLevel} === undefined ? a${level} : x${nextLevel}))`
        : `m${level}(a${level}, (x${nextLevel}) => { const a${nextLevel} = x${nextLevel} === undefined ? a${level} : x${nextLevel}; return ${body}; })`;
  }
  const names = middlewares.map((_, i) => `m${i}`);
  // eslint-disable-next-line no-new-func
  const factory = new Function(...names, 'inner', `return function dispatch(a0) { return ${body}; };`) as (...args: unknown[]) => Dispatch;
  return factory(...middlewares, innermost);
}

/**
 * The generic hand composition: per call, build the chain of closures in a loop, then call it.
 * Plain JS through `new Function`: under tsx, an arrow assigned to a variable gets esbuild's
 * keepNames `__name(…)` wrapper (an Object.defineProperty per closure), which would penalise it.
 */
function handBuiltPerCall(middlewares: Middleware[], innermost: Dispatch): Dispatch {
  // eslint-disable-next-line no-new-func
  return new Function(
    'middlewares',
    'innermost',
    `return function dispatch(payload) {
      let chain = innermost;
      for (let i = middlewares.length - 1; i >= 0; i--) {
        const middleware = middlewares[i];
        const downstream = chain;
        chain = (p) => middleware(p, (q) => downstream(q === undefined ? p : q));
      }
      return chain(payload);
    };`,
  )(middlewares, innermost) as Dispatch;
}

function busDispatch(middlewares: Middleware[], innermost: Dispatch): Dispatch {
  const bus = new HookBus();
  bus.declare('bench/chain', 'waterfall');
  for (const middleware of middlewares) bus.add('bench/chain', middleware, { owner: 'bench' });
  return (payload) => bus.waterfall('bench/chain', payload, innermost);
}

let sink = 0;

type Timer = (dispatch: Dispatch, iterations: number) => number;

/**
 * A timing loop of its own for each contender (a fresh function, so the call site `dispatch(i)`
 * only ever sees that contender and one contender's feedback cannot slow another down).
 */
function makeTimer(): Timer {
  // eslint-disable-next-line no-new-func
  const loop = new Function(
    'cpuUsage',
    `return function time(dispatch, iterations) {
      let acc = 0;
      const start = cpuUsage();
      for (let i = 0; i < iterations; i++) acc += dispatch(i);
      const used = cpuUsage(start);
      return [((used.user + used.system) * 1000) / iterations, acc];
    };`,
  )(process.cpuUsage) as (dispatch: Dispatch, iterations: number) => [number, number];
  return (dispatch, iterations) => {
    const [ns, acc] = loop(dispatch, iterations);
    sink += acc;
    return ns;
  };
}

/** Iterations that take about TARGET_MS. */
function calibrate(time: Timer, dispatch: Dispatch): number {
  let iterations = 1_000;
  for (;;) {
    const ns = time(dispatch, iterations) * iterations;
    if (ns > 5e6) return Math.max(1_000, Math.round((iterations * TARGET_MS * 1e6) / ns));
    iterations *= 4;
  }
}

interface SizeMeasure {
  readonly size: number;
  /** Medians, ns per dispatch. */
  readonly bus: number;
  readonly hand: number;
  readonly loop: number;
  /** bus / hand per interleaved repetition. */
  readonly ratios: number[];
  readonly busNs: number[];
  readonly handNs: number[];
}

/** One size, measured in this thread. */
function measure(size: number): SizeMeasure {
  const middlewares = makeMiddlewares(size);
  const contender = (label: string, dispatch: Dispatch) => ({ label, dispatch, time: makeTimer(), iterations: 0, ns: [] as number[] });
  const contenders = [contender('bus', busDispatch(middlewares, inner)), contender('hand', handComposed(middlewares, inner)), contender('hand-loop', handBuiltPerCall(middlewares, inner))];
  for (const c of contenders) {
    // Same answer: every middleware passes through, inner adds one.
    if (c.dispatch(41) !== 42) throw new Error(`bench self-check failed: ${c.label} at ${size} middlewares`);
    c.iterations = calibrate(c.time, c.dispatch);
    c.time(c.dispatch, c.iterations); // warm-up
  }
  for (let rep = 0; rep < REPETITIONS; rep++) for (const c of contenders) c.ns.push(c.time(c.dispatch, c.iterations));
  const [bus, hand, loop] = contenders.map((c) => median(c.ns)) as [number, number, number];
  return { size, bus, hand, loop, ratios: contenders[0]!.ns.map((ns, i) => ns / contenders[1]!.ns[i]!), busNs: contenders[0]!.ns, handNs: contenders[1]!.ns };
}

/**
 * Measures one size in a worker thread of its own: a fresh JIT state, so what V8 learnt about one
 * chain length cannot slow (or speed) another — the hand-composed side is fresh code per size too.
 * Falls back to this thread where a worker cannot load this TypeScript module.
 */
function measureIsolated(size: number): Promise<{ value: SizeMeasure; isolated: boolean }> {
  return inWorker(import.meta.url, { busBenchSize: size }, () => measure(size));
}

/** Fresh workers per size: V8's inlining of a deep chain differs from one JIT state to the next. */
const WORKERS = Number(process.env.BENCH_BUS_WORKERS ?? 3);

export async function run(): Promise<BenchResult> {
  let allIsolated = true;
  const bySize = new Map<number, SizeMeasure[]>();
  for (let w = 0; w < WORKERS; w++) {
    for (const size of SIZES) {
      const { value, isolated } = await measureIsolated(size);
      allIsolated &&= isolated;
      bySize.set(size, [...(bySize.get(size) ?? []), value]);
    }
  }
  const range = (values: number[]) => `${round(Math.min(...values))}–${round(Math.max(...values))}`;
  const rows: Row[] = [];
  let at10: number[] | undefined;
  for (const size of SIZES) {
    const runs = bySize.get(size)!;
    const workerRatios = runs.map((m) => median(m.ratios));
    if (size === 10) at10 = workerRatios;
    const bus = median(runs.map((m) => m.bus));
    const hand = median(runs.map((m) => m.hand));
    rows.push({
      middlewares: size,
      'bus ns': round(bus),
      'hand ns': round(hand),
      'bus/hand': ratioSpread(stat(workerRatios)),
      'bus/hand per worker': workerRatios.map((r) => `${r.toFixed(2)}x`).join(', '),
      'hand-loop ns': round(median(runs.map((m) => m.loop))),
      'bus ns min–max': range(runs.flatMap((m) => m.busNs)),
      'hand ns min–max': range(runs.flatMap((m) => m.handNs)),
    });
  }
  const r10 = at10 === undefined ? undefined : median(at10);
  return {
    name: 'bus',
    summary: 'waterfall dispatch through HookBus vs hand-composed closures doing the same work (issue #2)',
    tables: [{ rows }],
    targets: at10 === undefined || r10 === undefined ? [] : [check('bus / hand-composed closures, 10 middlewares (ns per dispatch)', ratioSpread(stat(at10)), '≤ 2x', r10 <= 2)],
    notes: [
      `ns per dispatch in process CPU time; per worker: median of ${REPETITIONS} interleaved repetitions of ~${TARGET_MS} ms each after a warm-up, and the median of the per-repetition bus/hand ratios; ${WORKERS} fresh ${allIsolated ? 'worker threads' : 'runs (no worker: one thread)'} per size; figure = median of the worker ratios, range = their min–max (per worker in the next column: each fresh JIT state is one draw — in one earlier run on this machine a single worker put 10 middlewares at 3.55x, i.e. the chain was not optimised as a whole there)`,
      'middleware: (payload, next) => next(); inner: (payload) => payload + 1; the same middleware objects on every side',
      'hand: literal nested closures written out for that size, one next closure per level per call (V8 may inline all of it)',
      'hand-loop: the generic hand composition, building (p) => m(p, (q) => down(q ?? p)) per level per call',
    ],
  };
}

if (!isMainThread && typeof (workerData as { busBenchSize?: unknown } | null)?.busBenchSize === 'number') {
  parentPort!.postMessage(measure((workerData as { busBenchSize: number }).busBenchSize));
} else if (isMainThread && isMain(import.meta.url)) {
  printResult(await run());
  if (sink === 0) console.log(''); // keeps the accumulated results observable
}
