/**
 * The stream bench's server process: two loopback fixture servers (test/support/fixture-server.ts),
 * each answering every request with one recorded stream repeated to about `BENCH_STREAM_CHUNKS`
 * SSE events (repeatSseFrames), served byte for byte in one write. It runs in a process of its own so
 * that its CPU time is not counted in the consumer's.
 *
 * Prints one JSON line `{ streams: { openai: { url, eventCount, bytes }, anthropic: … } }`, then
 * serves until its stdin closes (the parent exits) or it gets SIGTERM.
 */
import { answer, isMain } from '../support.ts';
import { readFixture, repeatSseFrames, splitSseFrames, startFixtureServer, type FixtureServer } from '../../test/support/fixture-server.ts';

export const STREAMS = {
  openai: 'openai-chat/parallel-tool-calls-weather-and-stock.sse',
  anthropic: 'anthropic/thinking-signature-delta-then-text.sse',
} as const;
export type StreamName = keyof typeof STREAMS;

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

async function main(): Promise<void> {
  const target = Number(process.env.BENCH_STREAM_CHUNKS ?? 20_000);
  const servers: FixtureServer[] = [];
  const streams: Record<string, ServedStream> = {};
  for (const [name, fixture] of Object.entries(STREAMS)) {
    const { body, repeat } = repeatedBody(fixture, target);
    const server = await startFixtureServer({ defaultResponse: { body } });
    servers.push(server);
    streams[name] = { url: name === 'openai' ? server.openaiBaseURL : server.anthropicBaseURL, root: server.url, eventCount: countEvents(body), bytes: Buffer.byteLength(body), repeat };
  }
  const stop = async () => {
    await Promise.all(servers.map((server) => server.close()));
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.stdin.on('end', () => void stop());
  process.stdin.resume();
  answer({ streams });
}

if (isMain(import.meta.url)) await main();
