/**
 * The stream bench's server process. Each recorded stream, repeated to about `BENCH_STREAM_CHUNKS`
 * SSE events (repeatSseFrames), is served byte for byte in two ways:
 * - `burst`: by the loopback fixture server (test/support/fixture-server.ts), the whole body in one
 *   write — the client reads 48–64 KiB at a time, a backlog of ~150–200 events per read;
 * - `paced`: by a small server here, one SSE event per write, `BENCH_STREAM_PACE_US` (100 µs) apart —
 *   what a provider's token stream looks like to the client: each read carries about one event
 *   (unless the consumer falls behind). 20k events take ≥ 2 s of wall time; CPU is what is measured.
 * It runs in a process of its own, so that its CPU time is not counted in the consumer's.
 *
 * Prints one JSON line `{ modes: { burst: { openai: ServedStream, anthropic: … }, paced: … } }`, then
 * serves until its stdin closes (the parent exits) or it gets SIGTERM.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answer, envInt, isMain } from '../support.ts';
import { readFixture, repeatSseFrames, splitSseFrames, startFixtureServer, type FixtureServer } from '../../test/support/fixture-server.ts';

export const STREAMS = {
  openai: 'openai-chat/parallel-tool-calls-weather-and-stock.sse',
  anthropic: 'anthropic/thinking-signature-delta-then-text.sse',
  // Many tool calls in one message (issue 22): the recording repeated TOOL_CALLS times.
  'openai-tools': 'openai-chat/single-tool-call-get-weather.sse',
  'anthropic-tools': 'anthropic/text-then-tool-use-input-json-delta.sse',
} as const;
export type StreamName = keyof typeof STREAMS;
/** The streams with the single-message recordings repeated to ~BENCH_STREAM_CHUNKS events. */
export const MAIN_STREAMS = ['openai', 'anthropic'] as const satisfies readonly StreamName[];
/** Tool calls in the one message of a `-tools` stream. */
export const TOOL_CALLS = 2_000;
/** Content blocks per repetition of each recording (what a correct consumer assembles). */
export const BLOCKS_PER_REPEAT: Record<StreamName, number> = { openai: 2, anthropic: 2, 'openai-tools': 1, 'anthropic-tools': 2 };
/** The provider a stream is for. */
export function providerOf(stream: StreamName): 'openai' | 'anthropic' {
  return stream.startsWith('openai') ? 'openai' : 'anthropic';
}
export const MODES = ['paced', 'burst'] as const;
export type Mode = (typeof MODES)[number];

export interface ServedStream {
  /** OpenAI: the SDK's `baseURL` (`…/v1`); Anthropic: the server root (the SDK appends `/v1/messages`). */
  readonly url: string;
  readonly root: string;
  /** SSE events in the body that carry data (OpenAI's `[DONE]` excluded): the chunk count per stream. */
  readonly eventCount: number;
  readonly bytes: number;
  readonly repeat: number;
}

/** SSE events with a data payload (`[DONE]` excluded). */
export function countEvents(body: string): number {
  let count = 0;
  for (const frame of splitSseFrames(body)) if (/^data: (?!\[DONE\])/m.test(frame)) count++;
  return count;
}

/** The fixture repeated to about `target` events. */
export function repeatedBody(fixture: string, target: number): { body: string; repeat: number } {
  const raw = readFixture(fixture);
  const one = countEvents(repeatSseFrames(raw, 1));
  const two = countEvents(repeatSseFrames(raw, 2));
  const per = two - one;
  const repeat = Math.max(1, Math.round((target - (one - per)) / per));
  return { body: repeatSseFrames(raw, repeat), repeat };
}

/** Pause between two events in `paced` mode, µs (a provider trickle: every read carries about one event). */
const PACE_US = envInt('BENCH_STREAM_PACE_US', 100, 0);
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * Serves `body` to every request, one SSE frame per write, PACE_US apart. The pause blocks this
 * process (Atomics.wait: sub-millisecond, no spinning; the server has nothing else to do while a
 * stream is read); when the consumer falls behind and the buffers fill, it waits for `drain` — a
 * slower consumer then reads a backlog, as it would from a real provider.
 */
async function startPacedServer(body: string): Promise<{ url: string; close(): Promise<void> }> {
  const frames = splitSseFrames(body).map((frame) => Buffer.from(frame, 'utf8'));
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
      let i = 0;
      // One frame per turn of the event loop (so that each write reaches the socket before the
      // next), PACE_US apart.
      const pump = (): void => {
        if (res.destroyed) return;
        if (i >= frames.length) {
          res.end();
          return;
        }
        const writable = res.write(frames[i++]!);
        Atomics.wait(sleeper, 0, 0, PACE_US / 1000);
        if (writable) setImmediate(pump);
        else res.once('drain', pump);
      };
      setImmediate(pump);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function main(): Promise<void> {
  const target = envInt('BENCH_STREAM_CHUNKS', 20_000);
  const closers: Array<() => Promise<void>> = [];
  const modes: Record<Mode, Record<string, ServedStream>> = { paced: {}, burst: {} };
  for (const [name, fixture] of Object.entries(STREAMS)) {
    const { body, repeat } = name.endsWith('-tools') ? { body: repeatSseFrames(readFixture(fixture), TOOL_CALLS), repeat: TOOL_CALLS } : repeatedBody(fixture, target);
    const facts = { eventCount: countEvents(body), bytes: Buffer.byteLength(body), repeat };
    const burst: FixtureServer = await startFixtureServer({ defaultResponse: { body } });
    closers.push(() => burst.close());
    modes.burst[name] = { url: providerOf(name as StreamName) === 'openai' ? burst.openaiBaseURL : burst.anthropicBaseURL, root: burst.url, ...facts };
    const paced = await startPacedServer(body);
    closers.push(() => paced.close());
    modes.paced[name] = { url: providerOf(name as StreamName) === 'openai' ? `${paced.url}/v1` : paced.url, root: paced.url, ...facts };
  }
  const stop = async () => {
    await Promise.all(closers.map((close) => close()));
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.stdin.on('end', () => void stop());
  process.stdin.resume();
  answer({ modes });
}

if (isMain(import.meta.url)) await main();
