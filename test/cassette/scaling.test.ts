/**
 * A cassette re-run of a long session costs the same per call late as early (issue 22, "no quadratic
 * paths … the cassette"). Each call's work read the whole history: the cassette hashed the whole
 * request to compare it with the recording (now RequestHasher: O(new messages)), and the replay
 * discipline compared the request's messages with the previous request's one pointer at a time
 * (~30 ns each on this machine: ~130 µs a call at 4,000 messages). The fold now notes the surfaces
 * it makes by appending (noteAppended), and sharedPrefixLength answers two lists of one such
 * lineage at once. On main before: 1,342 µs per call for the last 200 calls ÷ 192 for calls 21-220
 * (7.0x); with the hasher alone 1.7-2.2x; with both ~1.0x.
 *
 * The recording: 2,000 turns with the scripted model (one call per turn). The re-run: runCassette
 * with a config whose `llm/stream` middleware reads the process CPU when a call is dispatched and
 * when its first chunk arrives — the cassette's work per call (pick the call, compare the request,
 * start the replay), with the route and the replay discipline. Medians of the first calls (after a
 * warm-up) against the last: CPU time and medians, robust to a busy machine, never a wall-clock
 * threshold.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCassette, type CassetteReport } from '../../plugins/llm-replay/index.ts';
import { createHarness, createUserMessage, definePlugin, type HarnessConfig, type Message, type PluginSpec, type StreamChunk } from '../../runtime/index.ts';
import { noteAppended, sharedPrefixLength } from '../../runtime/llm/prefix.ts';
import { deepFreeze } from '../../runtime/internal.ts';
import { plugin, root, tempDir } from '../agent/support.ts';

const TURNS = 2_000;
const WARM_UP = 20;
/** Calls per sample: the first after the warm-up, and the last. */
const SAMPLE = 200;
/** CPU per call, late ÷ early: at most this. */
const RATIO = 1.5;

const dir = tempDir('harness-cassette-scaling-');
let recording: string;

function config(extra: PluginSpec[] = []): HarnessConfig {
  const scriptPath = join(dir, 'script.json');
  writeFileSync(scriptPath, JSON.stringify({ replies: [{ reply: { text: 'Noted; carry on.', usage: { inputTokens: 40, outputTokens: 4 } } }] }));
  return { defaults: { provider: 'scripted', model: 'test' }, plugins: [{ module: plugin('llm-scripted'), config: { scripts: { test: scriptPath } } }, ...extra] };
}

/** Records `turns` turns (one model call each) and returns the journal's path. */
async function record(turns: number, name: string): Promise<string> {
  const harness = await createHarness({ dataDir: join(dir, name), config: config() });
  try {
    const session = await harness.createSession({ cwd: dir });
    for (let turn = 1; turn <= turns; turn++) {
      const end = await session.runToEnd(`question ${turn}: what next?`);
      expect(end.data.reason).toBe('completed');
    }
    await session.close();
    return session.path;
  } finally {
    await harness.dispose();
  }
}

beforeAll(async () => {
  recording = await record(TURNS, 'long');
}, 600_000);

/** A middleware that reads the process CPU (µs) from a call's dispatch to its first chunk. */
function cpuPerCall(into: number[]): PluginSpec {
  return {
    plugin: definePlugin({
      name: 'cpu-per-call',
      setup(ctx) {
        ctx.on('llm/stream', (options, next) => {
          const before = process.cpuUsage();
          const stream = next(options);
          return (async function* timed(): AsyncGenerator<StreamChunk> {
            let first = true;
            for await (const chunk of stream) {
              if (first) {
                const used = process.cpuUsage(before);
                into.push(used.user + used.system);
                first = false;
              }
              yield chunk;
            }
          })();
        });
      },
    }),
  };
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

function expectSame(report: CassetteReport): void {
  expect(report.divergences).toEqual([]);
  expect(report.same).toBe(true);
}

describe('a cassette re-run of a long session', () => {
  it(`CPU per call at the end of ${TURNS} turns within ${RATIO}x of the start`, { timeout: 900_000 }, async () => {
    const cpu: number[] = [];
    const report = await runCassette(recording, { config: config([cpuPerCall(cpu)]), baseDir: root });
    expectSame(report);
    expect(report.calls).toEqual({ recorded: TURNS, served: TURNS, compared: TURNS, comparedOnHeader: 0, diverged: 0, injected: 0 });
    expect(cpu).toHaveLength(TURNS);
    const early = median(cpu.slice(WARM_UP, WARM_UP + SAMPLE));
    const late = median(cpu.slice(-SAMPLE));
    expect(late / early, `CPU µs per call (median): ${late.toFixed(0)} for the last ${SAMPLE} calls, ${early.toFixed(0)} for calls ${WARM_UP + 1}-${WARM_UP + SAMPLE}`).toBeLessThan(RATIO);
  });
});

describe('sharedPrefixLength over lists the fold made by appending', () => {
  it('is the shorter length within a lineage, and compares again after a fork', () => {
    const m = (text: string) => deepFreeze(createUserMessage(text)) as Message;
    const base = Object.freeze([m('a'), m('b')]);
    const one = Object.freeze([...base, m('c')]);
    const two = Object.freeze([...one, m('d')]);
    noteAppended(base, one);
    noteAppended(one, two);
    expect(sharedPrefixLength(base, two)).toBe(2);
    expect(sharedPrefixLength(two, one)).toBe(3);
    // `one` is extended a second time, differently: the new list is not of the first lineage.
    const other = Object.freeze([...one, m('x'), m('y')]);
    noteAppended(one, other);
    expect(sharedPrefixLength(two, other)).toBe(3);
    expect(sharedPrefixLength(other, one)).toBe(3);
    // A list the fold did not note is compared item by item.
    expect(sharedPrefixLength(two, Object.freeze([base[0]!, m('b'), m('c')]))).toBe(1);
  });
});
